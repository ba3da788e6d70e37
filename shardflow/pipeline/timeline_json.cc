// Timeline JSON and Chrome trace JSON (formats in pipeline/timeline_json.h and
// docs/pipeline_viz.md). Objects keep their fields in the order written (ordered_json), and
// every span, collective or event goes on a line of its own so that the files diff and grep
// well. A timeline without collectives or markers is written exactly as before they existed.
#include <shardflow/pipeline/timeline_json.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include <shardflow/core/error.h>
#include <shardflow/core/text_file.h>
#include <shardflow/pipeline/timeline_stats.h>

namespace sf::pipeline {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFormat = "shardflow-timeline";
constexpr int kVersion = 1;

bool is_phase(char c) { return c == 'F' || c == 'B' || c == 'W'; }

// What is wrong with a marker's label, or empty: a label is drawn on one line of a picture, so a
// control character (a newline, say) or a page of text has no place in it.
std::string label_problem(const std::string& label) {
  if (label.size() > kMaxMarkerLabel) return fmt::format("is {} bytes, over {}", label.size(), kMaxMarkerLabel);
  for (char c : label) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return fmt::format("has the control character {:#04x}", u);
  }
  return "";
}

bool is_marker_time(double time) { return std::isfinite(time) && time >= 0; }

// What the writers refuse: non-finite times, bad collectives, and markers the reader would refuse.
void check_writable(const Timeline& t) {
  for (size_t s = 0; s < t.spans.size(); ++s) {
    for (const Span& span : t.spans[s]) {
      SF_ENFORCE(std::isfinite(span.start) && std::isfinite(span.finish), InvalidArgument,
                 "timeline: stage {} action '{}' has a non-finite time ({} to {})", s, to_string(span.action),
                 span.start, span.finish);
    }
  }
  // No lists, or one per stage: a reader could not tell which stages a shorter list belongs to.
  SF_ENFORCE(t.collectives.empty() || t.collectives.size() == t.spans.size(), InvalidArgument,
             "timeline: {} collective lists for {} stages", t.collectives.size(), t.spans.size());
  for (size_t s = 0; s < t.collectives.size(); ++s) {
    for (const CollectiveSpan& c : t.collectives[s]) {
      SF_ENFORCE(std::isfinite(c.start) && std::isfinite(c.finish), InvalidArgument,
                 "timeline: stage {} collective '{}' has a non-finite time ({} to {})", s, c.op, c.start, c.finish);
      SF_ENFORCE(is_phase(c.phase), InvalidArgument, "timeline: stage {} collective '{}' has phase {}, not F, B or W",
                 s, c.op, static_cast<int>(c.phase));
    }
  }
  // A file the reader would refuse is not written.
  for (size_t i = 0; i < t.markers.size(); ++i) {
    const Marker& m = t.markers[i];
    SF_ENFORCE(is_marker_time(m.time), InvalidArgument, "timeline: marker {} has time {}, not a finite time >= 0", i,
               m.time);
    const std::string problem = label_problem(m.label);
    SF_ENFORCE(problem.empty(), InvalidArgument, "timeline: marker {} label {}", i, problem);
  }
}

// The marker as one line of JSON. nlohmann refuses to write a string that is not UTF-8.
std::string marker_json(const Marker& m, size_t i) {
  Json j;
  j["time"] = m.time;
  j["label"] = m.label;
  try {
    return j.dump();
  } catch (const Json::exception&) {
    SF_THROW(InvalidArgument, "timeline: marker {} label is not UTF-8", i);
  }
}

// Field `key` of `obj` as T, or an IoError naming the origin, the place and the field.
template <typename T>
T field(const Json& obj, const char* key, std::string_view origin, std::string_view where) {
  const auto it = obj.find(key);
  if (it == obj.end()) SF_THROW(IoError, "{}: {} has no field '{}'", origin, where, key);
  try {
    return it->template get<T>();
  } catch (const Json::exception&) {
    SF_THROW(IoError, "{}: {} field '{}' is {}, not the expected type", origin, where, key, it->dump());
  }
}

// The optional "collectives" field: one list per stage, each entry checked like a span.
std::vector<std::vector<CollectiveSpan>> read_collectives(const Json& doc, const Timeline& t, std::string_view origin) {
  std::vector<std::vector<CollectiveSpan>> out;
  const auto lists = doc.find("collectives");
  if (lists == doc.end()) return out;
  SF_ENFORCE(lists->is_array(), IoError, "{}: 'collectives' is {}, not an array", origin, lists->type_name());
  SF_ENFORCE(static_cast<int>(lists->size()) == t.stages, IoError, "{}: {} collective lists for {} stages", origin,
             lists->size(), t.stages);
  out.resize(t.stages);
  for (int s = 0; s < t.stages; ++s) {
    const Json& list = (*lists)[s];
    SF_ENFORCE(list.is_array(), IoError, "{}: collectives of stage {} are not an array", origin, s);
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string where = fmt::format("stage {} collective {}", s, i);
      SF_ENFORCE(list[i].is_object(), IoError, "{}: {} is not an object", origin, where);
      CollectiveSpan c;
      c.op = field<std::string>(list[i], "op", origin, where);
      SF_ENFORCE(!c.op.empty(), IoError, "{}: {} has an empty op", origin, where);
      c.group = list[i].contains("group") ? field<std::string>(list[i], "group", origin, where) : "";
      c.micro_batch = field<int>(list[i], "micro_batch", origin, where);
      c.chunk = field<int>(list[i], "chunk", origin, where);
      const auto phase = field<std::string>(list[i], "phase", origin, where);
      SF_ENFORCE(phase.size() == 1 && is_phase(phase[0]), IoError, "{}: {} '{}' has phase '{}', not F, B or W", origin,
                 where, c.op, phase);
      c.phase = phase[0];
      c.start = field<double>(list[i], "start", origin, where);
      c.finish = field<double>(list[i], "finish", origin, where);
      SF_ENFORCE(c.finish >= c.start, IoError, "{}: {} '{}' finishes at {} before it starts at {}", origin, where, c.op,
                 c.finish, c.start);
      SF_ENFORCE(c.micro_batch >= 0 && c.micro_batch < t.micro_batches && c.chunk >= 0 && c.chunk < t.chunks, IoError,
                 "{}: {} '{}' (micro-batch {}, chunk {}) is outside {} micro-batches and {} chunks", origin, where,
                 c.op, c.micro_batch, c.chunk, t.micro_batches, t.chunks);
      out[s].push_back(std::move(c));
    }
  }
  return out;
}

// The optional "markers" field: a list of {time, label}, each checked as the writer checks it.
std::vector<Marker> read_markers(const Json& doc, std::string_view origin) {
  std::vector<Marker> out;
  const auto list = doc.find("markers");
  if (list == doc.end()) return out;
  SF_ENFORCE(list->is_array(), IoError, "{}: 'markers' is {}, not an array", origin, list->type_name());
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& entry = (*list)[i];
    const std::string where = fmt::format("marker {}", i);
    SF_ENFORCE(entry.is_object(), IoError, "{}: {} is not an object", origin, where);
    const auto time = entry.find("time");
    // field<double> would take a boolean or null for a number; a time must be one.
    SF_ENFORCE(time != entry.end(), IoError, "{}: {} has no field 'time'", origin, where);
    SF_ENFORCE(time->is_number(), IoError, "{}: {} field 'time' is {}, not a number", origin, where, time->dump());
    Marker m;
    m.time = time->get<double>();
    SF_ENFORCE(is_marker_time(m.time), IoError, "{}: {} has time {}, not a finite time >= 0", origin, where, m.time);
    m.label = field<std::string>(entry, "label", origin, where);
    const std::string problem = label_problem(m.label);
    SF_ENFORCE(problem.empty(), IoError, "{}: {} label {}", origin, where, problem);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

double microseconds_per_unit(std::string_view unit) {
  if (unit == "us") return 1;
  if (unit == "ms") return 1e3;
  if (unit == "s") return 1e6;
  if (unit == "ns") return 1e-3;
  if (unit == "unit") return 1e3;
  SF_THROW(InvalidArgument, "timeline unit '{}' is not one of us, ms, s, ns, unit", unit);
}

std::string timeline_to_json(const Timeline& t) {
  microseconds_per_unit(t.unit);
  check_writable(t);
  Json head;
  head["format"] = kFormat;
  head["version"] = kVersion;
  head["schedule"] = t.schedule;
  head["source"] = t.source;
  head["unit"] = t.unit;
  head["stages"] = t.stages;
  head["micro_batches"] = t.micro_batches;
  head["chunks"] = t.chunks;
  std::string text = head.dump();
  text.pop_back();  // the closing brace; the spans follow
  text += ",\n\"spans\": [";
  for (size_t s = 0; s < t.spans.size(); ++s) {
    text += s == 0 ? "\n [" : ",\n [";
    for (size_t i = 0; i < t.spans[s].size(); ++i) {
      const Span& span = t.spans[s][i];
      Json j;
      j["action"] = to_string(span.action);
      j["start"] = span.start;
      j["finish"] = span.finish;
      text += i == 0 ? "\n  " : ",\n  ";
      text += j.dump();
    }
    text += "]";
  }
  text += "]";
  if (has_collectives(t)) {
    text += ",\n\"collectives\": [";
    for (size_t s = 0; s < t.collectives.size(); ++s) {
      text += s == 0 ? "\n [" : ",\n [";
      for (size_t i = 0; i < t.collectives[s].size(); ++i) {
        const CollectiveSpan& c = t.collectives[s][i];
        Json j;
        j["op"] = c.op;
        j["group"] = c.group;
        j["micro_batch"] = c.micro_batch;
        j["chunk"] = c.chunk;
        j["phase"] = std::string(1, c.phase);
        j["start"] = c.start;
        j["finish"] = c.finish;
        text += i == 0 ? "\n  " : ",\n  ";
        text += j.dump();
      }
      text += "]";
    }
    text += "]";
  }
  if (!t.markers.empty()) {
    text += ",\n\"markers\": [";
    for (size_t i = 0; i < t.markers.size(); ++i) {
      text += i == 0 ? "\n " : ",\n ";
      text += marker_json(t.markers[i], i);
    }
    text += "]";
  }
  text += "}\n";
  return text;
}

Timeline timeline_from_json(std::string_view text, std::string_view origin) {
  Json doc;
  try {
    doc = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {  // a parse error, or a number too large for a double
    SF_THROW(IoError, "{}: not JSON ({})", origin, e.what());
  }
  SF_ENFORCE(doc.is_object(), IoError, "{}: a timeline is a JSON object, not {}", origin, doc.type_name());
  if (doc.contains("format")) {
    const auto format = field<std::string>(doc, "format", origin, "the timeline");
    SF_ENFORCE(format == kFormat, IoError, "{}: format is '{}', not '{}'", origin, format, kFormat);
  }
  if (doc.contains("version")) {
    const int version = field<int>(doc, "version", origin, "the timeline");
    SF_ENFORCE(version == kVersion, IoError, "{}: version {} (this reader knows version {})", origin, version,
               kVersion);
  }
  Timeline t;
  t.schedule = doc.contains("schedule") ? field<std::string>(doc, "schedule", origin, "the timeline") : "";
  t.source = field<std::string>(doc, "source", origin, "the timeline");
  t.unit = field<std::string>(doc, "unit", origin, "the timeline");
  t.stages = field<int>(doc, "stages", origin, "the timeline");
  t.micro_batches = field<int>(doc, "micro_batches", origin, "the timeline");
  t.chunks = field<int>(doc, "chunks", origin, "the timeline");
  try {
    microseconds_per_unit(t.unit);
  } catch (const InvalidArgument& e) {
    SF_THROW(IoError, "{}: {}", origin, e.what());
  }
  SF_ENFORCE(t.stages >= 1 && t.micro_batches >= 1 && t.chunks >= 1, IoError,
             "{}: stages {}, micro_batches {} and chunks {} must all be at least 1", origin, t.stages, t.micro_batches,
             t.chunks);
  const auto spans = doc.find("spans");
  SF_ENFORCE(spans != doc.end() && spans->is_array(), IoError, "{}: the timeline has no 'spans' array", origin);
  SF_ENFORCE(static_cast<int>(spans->size()) == t.stages, IoError, "{}: {} span lists for {} stages", origin,
             spans->size(), t.stages);
  t.spans.resize(t.stages);
  for (int s = 0; s < t.stages; ++s) {
    const Json& list = (*spans)[s];
    SF_ENFORCE(list.is_array(), IoError, "{}: spans of stage {} are not an array", origin, s);
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string where = fmt::format("stage {} span {}", s, i);
      SF_ENFORCE(list[i].is_object(), IoError, "{}: {} is not an object", origin, where);
      Span span;
      const auto text_form = field<std::string>(list[i], "action", origin, where);
      try {
        span.action = parse_action(text_form);
      } catch (const InvalidArgument& e) {
        SF_THROW(IoError, "{}: {}: {}", origin, where, e.what());
      }
      span.start = field<double>(list[i], "start", origin, where);
      span.finish = field<double>(list[i], "finish", origin, where);
      SF_ENFORCE(span.finish >= span.start, IoError, "{}: {} '{}' finishes at {} before it starts at {}", origin, where,
                 text_form, span.finish, span.start);
      SF_ENFORCE(span.action.micro_batch < t.micro_batches && span.action.chunk < t.chunks, IoError,
                 "{}: {} '{}' is outside {} micro-batches and {} chunks", origin, where, text_form, t.micro_batches,
                 t.chunks);
      t.spans[s].push_back(span);
    }
  }
  t.collectives = read_collectives(doc, t, origin);
  t.markers = read_markers(doc, origin);
  return t;
}

void write_timeline_file(const std::string& path, const Timeline& timeline) {
  write_text_file(path, timeline_to_json(timeline));
}

Timeline read_timeline_file(const std::string& path) { return timeline_from_json(read_text_file(path), path); }

std::string chrome_trace_json(const Timeline& t) {
  const double us = microseconds_per_unit(t.unit);
  check_writable(t);
  const TimelineStats stats = timeline_stats(t);
  std::vector<std::string> events;
  const auto add = [&](const Json& e) { events.push_back(e.dump()); };
  const bool collectives = has_collectives(t);
  for (size_t s = 0; s < t.spans.size(); ++s) {
    const int pid = static_cast<int>(s);
    add({{"name", "process_name"},
         {"ph", "M"},
         {"pid", pid},
         {"tid", 0},
         {"args", {{"name", fmt::format("stage {}", s)}}}});
    add({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", pid}}}});
    add({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", "compute"}}}});
    add({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 1}, {"args", {{"name", "send/recv"}}}});
    if (collectives) {
      add({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 2}, {"args", {{"name", "collectives"}}}});
    }
  }
  for (size_t s = 0; s < t.spans.size(); ++s) {
    for (const Span& span : t.spans[s]) {
      const bool compute = is_compute(span.action.kind);
      add({{"name", to_string(span.action)},
           {"cat", std::string(kind_name(span.action.kind))},
           {"ph", "X"},
           {"pid", static_cast<int>(s)},
           {"tid", compute ? 0 : 1},
           {"ts", span.start * us},
           {"dur", (span.finish - span.start) * us},
           {"args", {{"micro_batch", span.action.micro_batch}, {"chunk", span.action.chunk}}}});
    }
  }
  for (size_t s = 0; s < t.collectives.size(); ++s) {
    for (const CollectiveSpan& c : t.collectives[s]) {
      add({{"name", c.op},
           {"cat", "collective"},
           {"ph", "X"},
           {"pid", static_cast<int>(s)},
           {"tid", 2},
           {"ts", c.start * us},
           {"dur", (c.finish - c.start) * us},
           {"args",
            {{"micro_batch", c.micro_batch},
             {"chunk", c.chunk},
             {"phase", std::string(1, c.phase)},
             {"group", c.group}}}});
    }
  }
  // A marker concerns every stage: a global instant event, which the viewers draw as a line
  // across all processes.
  for (size_t i = 0; i < t.markers.size(); ++i) {
    const Marker& m = t.markers[i];
    marker_json(m, i);  // refuses a label that is not UTF-8 as timeline_to_json does
    add({{"name", m.label}, {"cat", "marker"}, {"ph", "i"}, {"s", "g"}, {"pid", 0}, {"tid", 0}, {"ts", m.time * us}});
  }
  Json other;
  other["format"] = "shardflow-timeline-trace";
  other["schedule"] = t.schedule;
  other["source"] = t.source;
  other["unit"] = t.unit;
  other["us_per_unit"] = us;
  other["time_scale"] = t.unit == "unit" ? std::string("1 simulator unit = 1000 us (ts and dur are not measured)")
                                         : fmt::format("1 {} = {} us", t.unit, us);
  other["stages"] = t.stages;
  other["micro_batches"] = t.micro_batches;
  other["chunks"] = t.chunks;
  other["bubble_fraction"] = stats.bubble_fraction;
  Json peaks = Json::array();
  for (const StageStats& st : stats.stages) peaks.push_back(st.peak_stashed);
  other["peak_stashed"] = peaks;

  std::string text = "{\"displayTimeUnit\": \"ms\",\n\"otherData\": " + other.dump() + ",\n\"traceEvents\": [";
  for (size_t i = 0; i < events.size(); ++i) {
    text += i == 0 ? "\n " : ",\n ";
    text += events[i];
  }
  text += "]}\n";
  return text;
}

}  // namespace sf::pipeline
