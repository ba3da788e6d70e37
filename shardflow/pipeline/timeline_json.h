/// @file
/// Timelines (pipeline/timeline.h) as files: the timeline's own JSON form, which the runtime
/// writes for a measured step and sfviz reads back, and a Chrome/Perfetto trace for
/// chrome://tracing or ui.perfetto.dev. Both formats are written down in docs/pipeline_viz.md.
///
/// Timeline JSON (one span object per line):
/// @verbatim
///   {"format": "shardflow-timeline", "version": 1, "schedule": "1f1b", "source": "measured",
///    "unit": "us", "stages": 4, "micro_batches": 8, "chunks": 1,
///    "spans": [[{"action": "F0", "start": 0.0, "finish": 812.5}, ...], ...],   // [stage][i]
///    "collectives": [[{"op": "AllReduce", "group": "0-1", "micro_batch": 0, "chunk": 0,
///                      "phase": "F", "start": 3.25, "finish": 41.0}, ...], ...],  // [stage][i]
///    "markers": [{"time": 5120.0, "label": "generation 1: lost rank 2; 4 -> 3 ranks"}, ...]}
/// @endverbatim
/// "collectives" is written only when a stage has one (measured, operator-parallel stages) and
/// "markers" only when there is one (an elastic job's membership changes); both are optional
/// when reading, so files without them, older ones included, read as before.
///
/// Trace JSON: {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}: per stage a
/// process "stage k" (pid k) with a thread for compute (tid 0) and one for sends and receives
/// (tid 1), and when the timeline has collectives one for them (tid 2, "collectives"); each span
/// an "X" event named by its action text, args micro_batch and chunk, ts and dur in
/// microseconds; each collective one named by its op, args micro_batch, chunk, phase and group;
/// each marker a global instant event ("ph": "i", "s": "g", cat "marker") named by its label.
/// A planned timeline's abstract unit becomes 1000 µs, as otherData says.
///
/// Threading: pure functions, except the file functions, which touch only the named file.
#pragma once

#include <string>
#include <string_view>

#include <shardflow/pipeline/timeline.h>

namespace sf::pipeline {

/// Microseconds per unit of a timeline: "us" 1, "ms" 1000, "s" 1e6, "ns" 0.001, and the
/// simulator's abstract "unit" 1000. Throws InvalidArgument for any other unit.
double microseconds_per_unit(std::string_view unit);

/// The timeline's JSON text. Throws InvalidArgument for a non-finite time, an unknown unit, a
/// collective whose phase is not F, B or W, collectives given for some stages only, or a marker
/// the reader would refuse (a time not finite or negative; a label over kMaxMarkerLabel bytes,
/// with a control character, or not UTF-8).
std::string timeline_to_json(const Timeline& timeline);

/// Parses timeline_to_json's text. Throws IoError naming `origin` (a file name, say) and what is
/// wrong: bad JSON, a missing or mistyped field, a bad action, a span ending before it starts,
/// or an action outside the timeline's micro-batches or chunks; for collectives, a list per
/// stage that does not match the stages, an empty op, a phase not F, B or W, one ending before
/// it starts, or one outside the micro-batches or chunks; for markers, an entry that is not an
/// object, a time that is missing, not a number, negative or not finite, or a label that is
/// missing, not a string, over kMaxMarkerLabel bytes or holding a control character. The
/// schedule may be any name, "elastic" included: the reader asks no more of a timeline's spans
/// than that each be a valid action within m and v.
Timeline timeline_from_json(std::string_view text, std::string_view origin = "timeline JSON");

/// Writes timeline_to_json's text to `path` (core/text_file.h: parent directories created,
/// through a temporary file and a rename). Throws IoError when the file cannot be written.
void write_timeline_file(const std::string& path, const Timeline& timeline);

/// Reads a file written by write_timeline_file. Throws IoError for a missing or bad file.
Timeline read_timeline_file(const std::string& path);

/// The Chrome/Perfetto trace JSON of a timeline. Throws InvalidArgument where timeline_to_json
/// would.
std::string chrome_trace_json(const Timeline& timeline);

}  // namespace sf::pipeline
