#include <shardflow/actors/trace.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include <shardflow/core/error.h>

namespace sf {

void TraceRecorder::reset(std::vector<std::string> names, std::vector<std::string> ops) {
  names_ = std::move(names);
  ops_ = std::move(ops);
  lanes_.assign(names_.size(), {});
}

uint64_t TraceRecorder::this_thread() { return std::hash<std::thread::id>{}(std::this_thread::get_id()); }

void TraceRecorder::write(const std::string& path) const {
  int64_t t0 = INT64_MAX;
  for (const auto& l : lanes_)
    for (const auto& e : l) t0 = std::min(t0, e.start_ns);
  std::map<uint64_t, int> tids;  // small stable thread numbers for the viewer
  nlohmann::json events = nlohmann::json::array();
  for (size_t i = 0; i < lanes_.size(); ++i) {
    for (const auto& e : lanes_[i]) {
      auto [it, fresh] = tids.emplace(e.thread, static_cast<int>(tids.size()));
      events.push_back({{"name", names_[i]},
                        {"cat", ops_[i]},
                        {"ph", "X"},
                        {"pid", 0},
                        {"tid", it->second},
                        {"ts", (e.start_ns - t0) / 1000.0},
                        {"dur", (e.end_ns - e.start_ns) / 1000.0},
                        {"args", {{"op", ops_[i]}, {"step", e.step}}}});
    }
  }
  for (const auto& [hash, tid] : tids)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", tid},
                      {"args", {{"name", "actor worker " + std::to_string(tid)}}}});
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    SF_ENFORCE(f.good(), IoError, "cannot write trace file '{}'", path);
    f << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump() << '\n';
    SF_ENFORCE(f.good(), IoError, "writing trace file '{}' failed", path);
  }
  SF_ENFORCE(std::rename(tmp.c_str(), path.c_str()) == 0, IoError, "cannot rename '{}' to '{}'", tmp, path);
}

}  // namespace sf
