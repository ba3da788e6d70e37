#include <shardflow/comm/flight_recorder.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::comm {

namespace {

size_t capacity_from_env() {
  const char* v = std::getenv("SF_COMM_FLIGHT_RECORDS");
  if (!v || !*v) return 64;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v, &end, 10);
  SF_ENFORCE(*end == '\0' && errno == 0 && n >= 0 && n <= static_cast<long long>(kMaxFlightRecords), InvalidArgument,
             "SF_COMM_FLIGHT_RECORDS='{}' is not a whole number in 0 .. {}", brief_text(v, 40), kMaxFlightRecords);
  return static_cast<size_t>(n);
}

// A call names a collective and its tensor; a 10,000-dim shape is shown by its head.
constexpr size_t kMaxCallChars = 200;

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

std::string_view state_name(FlightRecord::State s) {
  switch (s) {
    case FlightRecord::State::kRunning: return "running";
    case FlightRecord::State::kDone: return "done";
    case FlightRecord::State::kFailed: return "failed";
  }
  return "?";
}

FlightRecorder::FlightRecorder() : capacity_(capacity_from_env()) {}

void FlightRecorder::begin(uint32_t seq, std::string call) {
  if (capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (records_.size() == capacity_) records_.pop_front();
  if (call.size() > kMaxCallChars) call = brief_text(call, kMaxCallChars);
  records_.push_back({seq, std::move(call), std::chrono::steady_clock::now(), {}, FlightRecord::State::kRunning, {}});
}

void FlightRecorder::end(uint32_t seq, FlightRecord::State state, std::string error) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
    if (it->seq != seq) continue;
    it->end = std::chrono::steady_clock::now();
    it->state = state;
    if (const auto nl = error.find('\n'); nl != std::string::npos) error.resize(nl);
    it->error = std::move(error);
    return;
  }
}

std::vector<FlightRecord> FlightRecorder::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {records_.begin(), records_.end()};
}

std::string FlightRecorder::dump(std::string_view header) const {
  const auto now = std::chrono::steady_clock::now();
  const auto recs = records();
  std::string out = fmt::format("{} (last {} collectives, oldest first)\n", header, recs.size());
  for (const auto& r : recs) {
    if (r.state == FlightRecord::State::kRunning)
      out += fmt::format("  seq {} {}: running for {:.3f} s\n", r.seq, r.call, seconds(now - r.start));
    else
      out += fmt::format("  seq {} {}: {} in {:.3f} s{}{}\n", r.seq, r.call, state_name(r.state),
                         seconds(r.end - r.start), r.error.empty() ? "" : ": ", r.error);
  }
  return out;
}

}  // namespace sf::comm
