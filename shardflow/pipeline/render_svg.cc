// The SVG picture of a timeline. Layout, top to bottom: two title lines; one row per stage
// (stage label on the left, a light lane, the blocks, the stage's idle share and stash on the
// right), with the collectives' lane under it when the timeline has collectives; the time axis,
// and under it the collectives' legend when there is a lane. Times map linearly onto the lane
// from the earliest start to the latest finish, and out to any marker outside that. Markers get
// a band of label lines between the titles and the rows and a dashed line down to the axis.
// Text sizes are estimated from DejaVu Sans' advance widths (about 0.64 em per digit), which is
// what a bare Debian renders with; a label that would not fit its block is left out and the
// block's tooltip still names it.
#include <shardflow/pipeline/render_svg.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <set>
#include <vector>

#include <shardflow/pipeline/timeline_stats.h>

namespace sf::pipeline {
namespace {

constexpr int kLeft = 70;    // stage labels
constexpr int kRight = 150;  // per-stage idle share and stash
constexpr int kTop = 64;     // two title lines
constexpr int kBottom = 50;  // axis, tick labels and axis title
constexpr int kRowGap = 6;
constexpr const char* kFont = "DejaVu Sans, Verdana, Arial, sans-serif";
constexpr const char* kTickColour = "#555555";
constexpr int kCollGap = 2;    // between a stage's row and its collectives' lane
constexpr int kCollLane = 9;   // the collectives' lane
constexpr int kCollLegend = 24;  // the collectives' legend under the axis
constexpr const char* kMarkerColour = "#d62728";  // dashed, so not taken for ReduceScatter's red block
constexpr int kMarkerLine = 14;        // one line of marker labels, in px
constexpr int kMarkerLines = 3;        // at most; a label with no room on any is left to its tooltip
constexpr double kMarkerFont = 11;     // px
constexpr size_t kMarkerChars = 48;    // a longer label is shortened in the picture

// Collective ops with a colour of their own, in legend order; purple, teal, red, brown and olive
// stay clear of the F, B and W blue, green and orange.
struct OpColour {
  const char* op;
  const char* colour;
};
constexpr OpColour kOpColours[] = {{"AllReduce", "#8e44ad"},
                                   {"AllGather", "#1a9e9e"},
                                   {"ReduceScatter", "#c0392b"},
                                   {"AlltoAll", "#8d5a3b"},
                                   {"Broadcast", "#a89a00"}};
constexpr const char* kOtherOpColour = "#7f7f7f";

struct Rgb {
  int r, g, b;
};

Rgb base_colour(ActionKind kind) {
  switch (kind) {
    case ActionKind::kForward:
      return {0x3b, 0x6f, 0xb6};  // blue
    case ActionKind::kBackward:
      return {0x3a, 0x9a, 0x4a};  // green
    case ActionKind::kWeight:
      return {0xe0, 0x7b, 0x1f};  // orange
    default:
      return {0x55, 0x55, 0x55};
  }
}

// Chunk 0 in the full colour, the last chunk mixed half-way to white.
Rgb shade(Rgb c, int chunk, int chunks) {
  const double f = chunks > 1 ? 0.5 * std::clamp(chunk, 0, chunks - 1) / (chunks - 1) : 0.0;
  const auto mix = [f](int x) { return static_cast<int>(std::lround(x + (255 - x) * f)); };
  return {mix(c.r), mix(c.g), mix(c.b)};
}

std::string hex(Rgb c) { return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b); }

// Dark text on light fills, white text on dark ones.
const char* text_colour(Rgb c) { return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b < 140 ? "#ffffff" : "#1a1a1a"; }

double text_width(std::string_view text, double font_px) { return 0.64 * font_px * static_cast<double>(text.size()); }

// 1, 2 or 5 times a power of ten, giving about `target` ticks over `range`.
double nice_step(double range, int target) {
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double n = raw / mag;
  return (n < 1.5 ? 1 : n < 3 ? 2 : n < 7 ? 5 : 10) * mag;
}

// How the axis writes times: the scale from the timeline's unit and the unit's name.
struct AxisUnit {
  double scale;
  std::string name;
};
AxisUnit axis_unit(const std::string& unit, double makespan) {
  if (unit == "unit") return {1, "simulator units"};
  if (unit == "us" && makespan >= 5000) return {1e-3, "ms"};
  return {1, unit_name(unit)};
}

std::string schedule_label(const Timeline& t) { return t.schedule.empty() ? "(parsed schedule)" : t.schedule; }

// Code points of UTF-8 text: what a picture's width goes by.
size_t characters(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

// `text` cut to at most `limit` code points, the last of them an ellipsis when it was cut.
std::string shortened(std::string_view text, size_t limit) {
  if (characters(text) <= limit) return std::string(text);
  if (limit == 0) return "";
  size_t kept = 0, at = 0;
  for (; at < text.size(); ++at) {
    if ((static_cast<unsigned char>(text[at]) & 0xc0) != 0x80 && kept++ == limit - 1) break;
  }
  return std::string(text.substr(0, at)) + "\xe2\x80\xa6";
}

// The time range the picture spans: the spans', widened to take in every marker.
struct View {
  double start = 0, range = 0;  // range 0: nothing to spread out (no spans, or all at one time)
};
View view_of(const Timeline& t) {
  bool any = false;
  double lo = 0, hi = 0;
  const auto take = [&](double time) {
    lo = any ? std::min(lo, time) : time;
    hi = any ? std::max(hi, time) : time;
    any = true;
  };
  for (const auto& stage : t.spans) {
    for (const Span& s : stage) {
      take(s.start);
      take(s.finish);
    }
  }
  for (const Marker& m : t.markers) take(m.time);
  return {lo, hi - lo};
}

// Where a marker's label goes: which line of the band, from which x, anchored at its start or
// its end; an empty text when it has no room.
struct MarkerPlace {
  const Marker* marker;
  double x;
  int line = 0;
  bool end_anchored = false;
  std::string text;
};

// In time order, each label on the first band line where it clears the labels before it; to the
// right of its line, or to the left where the picture ends first.
std::vector<MarkerPlace> place_markers(const Timeline& t, int width, const std::function<double(double)>& x_of) {
  std::vector<MarkerPlace> places;
  for (const Marker& m : t.markers) places.push_back({&m, x_of(m.time), 0, false, {}});
  std::stable_sort(places.begin(), places.end(),
                   [](const MarkerPlace& a, const MarkerPlace& b) { return a.marker->time < b.marker->time; });
  const double char_w = text_width("0", kMarkerFont);
  const size_t fit = static_cast<size_t>(std::max(0.0, (width - 8) / char_w));
  double line_end[kMarkerLines];
  std::fill(std::begin(line_end), std::end(line_end), -1e300);
  for (MarkerPlace& p : places) {
    const std::string text = shortened(p.marker->label, std::min(kMarkerChars, fit));
    if (text.empty()) continue;
    const double w = char_w * static_cast<double>(characters(text));
    double from = p.x + 3;
    if (from + w > width - 4 && p.x - 3 - w >= 4) {
      from = p.x - 3 - w;
      p.end_anchored = true;
    }
    for (int line = 0; line < kMarkerLines; ++line) {
      if (from < line_end[line] + 6) continue;
      p.line = line;
      p.text = text;
      line_end[line] = from + w;
      break;
    }
  }
  return places;
}

// The band lines the labels take: at least one, so that every marker's line starts the same way.
int marker_lines(const std::vector<MarkerPlace>& places) {
  int lines = 1;
  for (const MarkerPlace& p : places)
    if (!p.text.empty()) lines = std::max(lines, p.line + 1);
  return lines;
}

// Each marker: a dashed line from the top of the band at `top` down to the axis at `bottom`, its
// label on its band line, and the whole label with its time as the tooltip of both.
std::string marker_lines_svg(const Timeline& t, const std::vector<MarkerPlace>& places, int top, int bottom) {
  std::string svg = "<g class=\"markers\">\n";
  for (const MarkerPlace& p : places) {
    const std::string tip = fmt::format("marker at {:g} {}: {}", p.marker->time, unit_name(t.unit), p.marker->label);
    svg += fmt::format("<g class=\"marker\"><title>{}</title>\n", xml_escape(tip));
    svg += fmt::format(
        "<line x1=\"{0:.2f}\" y1=\"{1}\" x2=\"{0:.2f}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"1.5\" "
        "stroke-dasharray=\"5,3\"/>\n",
        p.x, top, bottom, kMarkerColour);
    if (!p.text.empty()) {
      svg += fmt::format("<text x=\"{:.2f}\" y=\"{}\" font-size=\"{:g}\" fill=\"{}\"{}>{}</text>\n",
                         p.end_anchored ? p.x - 3 : p.x + 3, top + (p.line + 1) * kMarkerLine - 3, kMarkerFont,
                         kMarkerColour, p.end_anchored ? " text-anchor=\"end\"" : "", xml_escape(p.text));
    }
    svg += "</g>\n";
  }
  svg += "</g>\n";
  return svg;
}

std::string stash_list(const TimelineStats& stats) {
  std::string list;
  for (size_t s = 0; s < stats.stages.size(); ++s) {
    list += fmt::format("{}{}", s == 0 ? "" : ", ", stats.stages[s].peak_stashed);
  }
  return list;
}

// The two title lines: what was scheduled, then what it cost. An elastic job's steps are not a
// pipeline's micro-batches and hold no stash, so its lines count steps and membership changes.
std::string title_lines(const Timeline& t, const TimelineStats& stats, const AxisUnit& axis) {
  std::string svg;
  if (is_elastic(t)) {
    int steps = 0;
    for (const auto& stage : t.spans)
      for (const Span& span : stage) steps += is_compute(span.action.kind) ? 1 : 0;
    svg += fmt::format(
        "<text class=\"title\" x=\"{}\" y=\"22\" font-size=\"16\" font-weight=\"bold\" fill=\"#1a1a1a\">{} \xc2\xb7 "
        "the steps of one rank, {} step{} \xc2\xb7 {}</text>\n",
        kLeft, xml_escape(schedule_label(t)), steps, steps == 1 ? "" : "s", xml_escape(t.source));
    svg += fmt::format(
        "<text class=\"subtitle\" x=\"{}\" y=\"44\" font-size=\"13\" fill=\"#333333\">busy {:.1f}% \xc2\xb7 makespan "
        "{:.4g} {} \xc2\xb7 {} membership change{}</text>\n",
        kLeft, 100 * (1 - stats.bubble_fraction), stats.makespan * axis.scale, xml_escape(axis.name),
        t.markers.size(), t.markers.size() == 1 ? "" : "s");
    return svg;
  }
  svg += fmt::format(
      "<text class=\"title\" x=\"{}\" y=\"22\" font-size=\"16\" font-weight=\"bold\" fill=\"#1a1a1a\">{} \xc2\xb7 p = "
      "{} stages, m = {} micro-batches, v = {} chunk{} \xc2\xb7 {}</text>\n",
      kLeft, xml_escape(schedule_label(t)), t.stages, t.micro_batches, t.chunks, t.chunks == 1 ? "" : "s",
      xml_escape(t.source));
  svg += fmt::format(
      "<text class=\"subtitle\" x=\"{}\" y=\"44\" font-size=\"13\" fill=\"#333333\">bubble fraction {:.3f} ({:.1f}% "
      "idle) \xc2\xb7 makespan {:.4g} {} \xc2\xb7 peak stashed activations per stage: {}</text>\n",
      kLeft, stats.bubble_fraction, 100 * stats.bubble_fraction, stats.makespan * axis.scale, xml_escape(axis.name),
      stash_list(stats));
  return svg;
}

std::string label_of(const Timeline& t, const Action& a) {
  return t.chunks > 1 ? fmt::format("{}.{}", a.micro_batch, a.chunk) : fmt::format("{}", a.micro_batch);
}

// Wide enough for a 12 px label on a block of the typical duration of the quickest kind (the
// smallest of the F, B and W medians) over the picture's time `range`, within limits.
int auto_width(const Timeline& t, double range) {
  constexpr int kMin = 1200, kMax = 4000;
  std::vector<double> durations[kActionKinds];
  size_t label = 1;
  for (const auto& stage : t.spans) {
    for (const Span& s : stage) {
      if (!is_compute(s.action.kind)) continue;
      durations[static_cast<int>(s.action.kind)].push_back(s.finish - s.start);
      label = std::max(label, label_of(t, s.action).size());
    }
  }
  double typical = -1;
  for (auto& d : durations) {
    if (d.empty()) continue;
    std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
    typical = typical < 0 ? d[d.size() / 2] : std::min(typical, d[d.size() / 2]);
  }
  if (typical < 0 || range <= 0) return kMin;
  if (typical == 0) return kMax;
  const double need = range / typical * (text_width(std::string(label, '0'), 12) + 6) + kLeft + kRight;
  return static_cast<int>(std::clamp(need, double(kMin), double(kMax)));
}

// An op name as a class name: letters, digits, '-' and '_' kept, anything else '_'.
std::string class_name(std::string_view op) {
  std::string out;
  for (char c : op) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return out;
}

// "F3" or, with chunks, "F3.1": the phase a collective ran in, written like its action.
std::string phase_label(const Timeline& t, const CollectiveSpan& c) {
  return t.chunks > 1 ? fmt::format("{}{}.{}", c.phase, c.micro_batch, c.chunk)
                      : fmt::format("{}{}", c.phase, c.micro_batch);
}

// The stage's collectives as small blocks on a lane under its row, with its collective share.
std::string collective_lane(const Timeline& t, int s, const StageStats& st, double y, int plot_w,
                            const std::function<double(double)>& x_of) {
  std::string svg = fmt::format(
      "<rect class=\"coll-lane\" x=\"{}\" y=\"{:g}\" width=\"{}\" height=\"{}\" fill=\"#f6f7f9\"/>\n", kLeft, y,
      plot_w, kCollLane);
  const auto clamp_x = [&](double time) { return std::clamp(x_of(time), double(kLeft), double(kLeft + plot_w)); };
  if (s < static_cast<int>(t.collectives.size())) {
    for (const CollectiveSpan& c : t.collectives[s]) {
      const std::string group = c.group.empty() ? "" : fmt::format(" on group {}", c.group);
      const std::string tip =
          fmt::format("stage {} {}{} in {} (micro-batch {}, chunk {}): start {:g}, finish {:g} {}, {:g} {}", s, c.op,
                      group, phase_label(t, c), c.micro_batch, c.chunk, c.start, c.finish, unit_name(t.unit),
                      c.finish - c.start, unit_name(t.unit));
      const double x0 = clamp_x(c.start);
      // At least a pixel: a collective is often far shorter than one.
      const double w = std::max(clamp_x(c.finish) - x0, 1.0);
      svg += fmt::format(
          "<rect class=\"coll {}\" x=\"{:.2f}\" y=\"{:g}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"><title>{}</title>"
          "</rect>\n",
          xml_escape(class_name(c.op)), x0, y, w, kCollLane, collective_colour(c.op), xml_escape(tip));
    }
  }
  if (st.busy > 0) {
    svg += fmt::format(
        "<text class=\"coll-stats\" x=\"{}\" y=\"{:g}\" font-size=\"10\" fill=\"#555555\">coll. {:.1f}% of busy"
        "</text>\n",
        kLeft + plot_w + 8, y + kCollLane - 1, 100 * st.collective_in_compute / st.busy);
  }
  return svg;
}

// What the lanes' colours mean, on one line from x = kLeft at baseline y.
std::string collective_legend(const Timeline& t, const TimelineStats& stats, int y) {
  std::string svg = "<g class=\"coll-legend\">\n";
  const std::string lead = "collectives (the lane under each stage):";
  svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#333333\">{}</text>\n", kLeft, y, lead);
  // Mostly lower-case letters, narrower than the digits text_width is made for.
  double x = kLeft + 0.75 * text_width(lead, 12) + 12;
  for (const std::string& op : collective_ops({t})) {
    svg += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>\n", x, y - 9,
                       collective_colour(op));
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"12\" fill=\"#333333\">{}</text>\n", x + 14, y,
                       xml_escape(op));
    x += 14 + 0.85 * text_width(op, 12) + 12;
  }
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{}\" font-size=\"12\" fill=\"#333333\">\xc2\xb7 {} collectives, {:.1f}% of compute "
      "time</text>\n",
      x, y, stats.collectives, 100 * stats.collective_share);
  svg += "</g>\n";
  return svg;
}

}  // namespace

std::string collective_colour(std::string_view op) {
  for (const OpColour& c : kOpColours)
    if (op == c.op) return c.colour;
  return kOtherOpColour;
}

std::vector<std::string> collective_ops(const std::vector<Timeline>& timelines) {
  std::set<std::string> seen;
  for (const Timeline& t : timelines)
    for (const auto& stage : t.collectives)
      for (const CollectiveSpan& c : stage) seen.insert(c.op);
  std::vector<std::string> ops;
  for (const OpColour& c : kOpColours)
    if (seen.erase(c.op)) ops.emplace_back(c.op);
  ops.insert(ops.end(), seen.begin(), seen.end());
  return ops;
}

std::string action_colour(ActionKind kind, int chunk, int chunks) {
  if (!is_compute(kind)) return kTickColour;
  return hex(shade(base_colour(kind), chunk, chunks));
}

std::string unit_name(std::string_view unit) {
  if (unit == "unit") return "units";
  if (unit == "us") return "\xc2\xb5s";
  return std::string(unit);
}

std::string idle_colour() { return "#eceef2"; }

std::string marker_colour() { return kMarkerColour; }

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string render_svg(const Timeline& t, const SvgOptions& o) {
  const TimelineStats stats = timeline_stats(t);
  const bool elastic = is_elastic(t);
  const View view = view_of(t);  // the spans' start and makespan unless a marker lies outside them
  const int p = static_cast<int>(t.spans.size());
  const int row_h = std::max(o.row_height, 14);
  const int plot_w = std::max((o.width > 0 ? o.width : auto_width(t, view.range)) - kLeft - kRight, 100);
  const int width = kLeft + plot_w + kRight;
  const bool collectives = has_collectives(t);
  const int pitch = row_h + (collectives ? kCollGap + kCollLane : 0) + kRowGap;
  const int rows_h = p * pitch - (p > 0 ? kRowGap : 0);
  const double t0 = view.start;
  const double range = view.range > 0 ? view.range : 1;
  const std::function<double(double)> x_of = [&](double time) { return kLeft + (time - t0) / range * plot_w; };
  const AxisUnit axis = axis_unit(t.unit, view.range);
  const std::vector<MarkerPlace> markers = place_markers(t, width, x_of);
  // The markers' label band pushes the rows down; without markers nothing moves.
  const int band = markers.empty() ? 0 : marker_lines(markers) * kMarkerLine + 4;
  const int rows_top = kTop + band;
  const int height = rows_top + rows_h + kBottom + (collectives ? kCollLegend : 0);

  std::string svg;
  if (o.standalone) {
    svg += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    svg += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\"",
                       width, height);
  } else {
    svg += fmt::format("<svg width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\"", width, height);
  }
  svg += fmt::format(" font-family=\"{}\" font-size=\"12\" class=\"timeline {}\">\n", kFont, xml_escape(t.source));
  svg += fmt::format("<rect class=\"background\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
                     width, height);

  svg += title_lines(t, stats, axis);

  for (int s = 0; s < p; ++s) {
    const int y = rows_top + s * pitch;
    const StageStats& st = stats.stages[s];
    svg += fmt::format("<g class=\"stage\" id=\"stage-{}\">\n", s);
    svg +=
        fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"13\" fill=\"#1a1a1a\">{}</text>\n",
                    kLeft - 8, y + row_h / 2 + 5, elastic ? std::string("steps") : fmt::format("stage {}", s));
    svg += fmt::format("<rect class=\"lane\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n", kLeft, y,
                       plot_w, row_h, idle_colour());
    for (const Span& span : t.spans[s]) {
      const std::string text = to_string(span.action);
      const std::string what = elastic && span.action.kind == ActionKind::kForward
                                   ? fmt::format("step {}", span.action.micro_batch)
                                   : fmt::format("stage {} {}", s, text);
      const std::string tip =
          fmt::format("{}: start {:g}, finish {:g} {}", what, span.start, span.finish, unit_name(t.unit));
      const double x0 = x_of(span.start);
      const double x1 = x_of(span.finish);
      if (!is_compute(span.action.kind)) {
        // A send or receive: a tick at its end, at the foot of the row.
        svg += fmt::format(
            "<line class=\"xfer {}\" x1=\"{:.2f}\" y1=\"{}\" x2=\"{:.2f}\" y2=\"{}\" stroke=\"{}\" "
            "stroke-width=\"1.5\"><title>{}</title></line>\n",
            kind_name(span.action.kind), x1, y + row_h - 7, x1, y + row_h, kTickColour, xml_escape(tip));
        continue;
      }
      const Rgb fill = shade(base_colour(span.action.kind), span.action.chunk, t.chunks);
      const double w = std::max(x1 - x0, 0.5);
      svg += fmt::format(
          "<rect class=\"blk {}\" x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" stroke=\"#ffffff\" "
          "stroke-width=\"1\"><title>{}</title></rect>\n",
          kind_name(span.action.kind), x0, y + 2, w, row_h - 4, hex(fill), xml_escape(tip));
      const std::string label = label_of(t, span.action);
      for (double font : {12.0, 9.0}) {
        if (text_width(label, font) + 4 > w) continue;
        svg += fmt::format(
            "<text class=\"label\" x=\"{:.2f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"{:g}\" fill=\"{}\" "
            "pointer-events=\"none\">{}</text>\n",
            x0 + w / 2, y + row_h / 2.0 + font * 0.36, font, text_colour(fill), label);
        break;
      }
    }
    svg += fmt::format(
        "<text class=\"stage-stats\" x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#333333\">idle {:.1f}%{}</text>\n",
        kLeft + plot_w + 8, y + row_h / 2 + 4, 100 * st.bubble_fraction,
        elastic ? std::string() : fmt::format(" \xc2\xb7 stash {}", st.peak_stashed));
    if (collectives) svg += collective_lane(t, s, st, y + row_h + kCollGap, plot_w, x_of);
    svg += "</g>\n";
  }

  // Time axis: a base line, ticks at round values, the unit.
  const int ay = rows_top + rows_h + 6;
  // Markers over the rows, so that no block hides them.
  if (!markers.empty()) svg += marker_lines_svg(t, markers, kTop, ay);
  svg += "<g class=\"axis\">\n";
  svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333333\" stroke-width=\"1\"/>\n", kLeft,
                     ay, kLeft + plot_w, ay);
  if (view.range > 0) {
    const double lo = t0 * axis.scale;
    const double hi = (t0 + view.range) * axis.scale;
    const double step = nice_step(hi - lo, std::max(2, plot_w / 90));
    for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k += 1) {
      const double value = k * step;
      const double x = x_of(value / axis.scale);
      svg += fmt::format("<line x1=\"{0:.2f}\" y1=\"{1}\" x2=\"{0:.2f}\" y2=\"{2}\" stroke=\"#333333\"/>\n", x, ay,
                         ay + 5);
      svg += fmt::format(
          "<text x=\"{:.2f}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\" fill=\"#333333\">{:g}</text>\n", x,
          ay + 18, std::abs(value) < step * 1e-9 ? 0.0 : value);
    }
  }
  svg +=
      fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\" fill=\"#333333\">time ({})</text>\n",
                  kLeft + plot_w / 2, ay + 38, xml_escape(axis.name));
  svg += "</g>\n";
  if (collectives) svg += collective_legend(t, stats, ay + 38 + kCollLegend);
  svg += "</svg>\n";
  return svg;
}

}  // namespace sf::pipeline
