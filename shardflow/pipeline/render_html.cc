// The HTML page: a style sheet in the head, a legend, then per timeline a section with the
// SVG and the figures as a table (with collective columns when the timeline has collectives).
// Colours come from render_svg.h so the legend matches. Markers, collectives and elastic
// timelines each add to the page only where there are some, so that other pages stay as they were.
#include <shardflow/pipeline/render_html.h>

#include <fmt/format.h>

#include <algorithm>

#include <shardflow/pipeline/timeline_stats.h>

namespace sf::pipeline {
namespace {

constexpr const char* kStyle = R"(body { font-family: "DejaVu Sans", Verdana, Arial, sans-serif; color: #1a1a1a;
  margin: 16px 24px; background: #ffffff; }
h1 { font-size: 20px; margin: 0 0 8px 0; }
h2 { font-size: 16px; margin: 24px 0 6px 0; }
.legend { font-size: 13px; margin: 4px 0 8px 0; }
.legend span.item { margin-right: 18px; white-space: nowrap; }
.legend span.swatch { display: inline-block; width: 14px; height: 14px; vertical-align: -2px;
  margin-right: 5px; border: 1px solid #c8ccd2; }
.legend span.tick { display: inline-block; width: 2px; height: 14px; vertical-align: -2px;
  margin: 0 6px 0 6px; }
div.picture { overflow-x: auto; }
svg { display: block; }
rect.blk:hover { stroke: #000000; stroke-width: 2; }
table.stats { border-collapse: collapse; font-size: 13px; margin: 6px 0 0 70px; }
table.stats th, table.stats td { border: 1px solid #d0d4da; padding: 3px 10px; text-align: right; }
table.stats th { background: #f3f4f6; }
table.stats tr.all td { font-weight: bold; }
p.note { font-size: 12px; color: #555555; max-width: 900px; }
)";
// Only on pages with collectives, so that a page without any stays as it was.
constexpr const char* kCollectiveStyle = "rect.coll:hover { stroke: #000000; stroke-width: 1; }\n";
// Only on pages with markers, likewise.
constexpr const char* kMarkerStyle =
    ".legend span.mark { display: inline-block; width: 0; height: 14px; vertical-align: -2px;\n"
    "  margin: 0 8px 0 6px; border-left: 2px dashed; }\n"
    "g.marker:hover line { stroke-width: 3; }\n";

bool any_markers(const std::vector<Timeline>& timelines) {
  for (const Timeline& t : timelines)
    if (!t.markers.empty()) return true;
  return false;
}

// A page of elastic timelines alone: its blocks are steps, not forward passes.
bool all_elastic(const std::vector<Timeline>& timelines) {
  for (const Timeline& t : timelines)
    if (!is_elastic(t)) return false;
  return !timelines.empty();
}

// The SVG's own title names the schedule; the heading says where the times come from.
std::string heading_of(const Timeline& t) {
  const std::string unit = t.unit == "unit" ? "simulator units" : unit_name(t.unit);
  if (is_elastic(t)) {
    return fmt::format("{}: the steps of one rank of an elastic job, in {}",
                       t.source == "measured" ? std::string("Measured") : t.source, unit);
  }
  if (t.source == "planned") return fmt::format("Planned: the simulator's times, in {}", unit);
  if (t.source == "measured") return fmt::format("Measured: the stage actors' clocks, in {}", unit);
  return fmt::format("{}: times in {}", t.source, unit);
}

std::string swatch(const std::string& colour, const std::string& text) {
  return fmt::format("<span class=\"item\"><span class=\"swatch\" style=\"background:{}\"></span>{}</span>\n", colour,
                     text);
}

// Kinds and chunks seen in any of the timelines, so the legend lists only what is drawn.
std::string legend(const std::vector<Timeline>& timelines) {
  bool kinds[kActionKinds] = {};
  bool transfers = false;
  int chunks = 1;
  const bool steps = all_elastic(timelines);
  for (const Timeline& t : timelines) {
    chunks = std::max(chunks, t.chunks);
    for (const auto& stage : t.spans) {
      for (const Span& s : stage) {
        kinds[static_cast<int>(s.action.kind)] = true;
        transfers = transfers || !is_compute(s.action.kind);
      }
    }
  }
  const struct {
    ActionKind kind;
    const char* name;
  } compute[] = {{ActionKind::kForward, "F forward"},
                 {ActionKind::kBackward, "B backward"},
                 {ActionKind::kWeight, "W weight gradient"}};
  std::string html = "<div class=\"legend\">\n";
  for (const auto& c : compute) {
    if (!kinds[static_cast<int>(c.kind)]) continue;
    for (int chunk = 0; chunk < chunks; ++chunk) {
      std::string text = chunks > 1 ? fmt::format("{}, chunk {}", c.name, chunk) : std::string(c.name);
      if (steps && c.kind == ActionKind::kForward) text = "step";
      html += swatch(action_colour(c.kind, chunk, chunks), text);
    }
  }
  html += swatch(idle_colour(), "idle");
  if (transfers) {
    html +=
        fmt::format("<span class=\"item\"><span class=\"tick\" style=\"background:{}\"></span>send / receive</span>\n",
                    action_colour(ActionKind::kSendActivation));
  }
  for (const std::string& op : collective_ops(timelines)) {
    html += swatch(collective_colour(op), fmt::format("collective {} (lane under a stage)", xml_escape(op)));
  }
  if (any_markers(timelines)) {
    html += fmt::format(
        "<span class=\"item\"><span class=\"mark\" style=\"border-color:{}\"></span>marker (its label at the top)"
        "</span>\n",
        marker_colour());
  }
  html += fmt::format("<span class=\"item\">labels: {}{}</span>\n", steps ? "step" : "micro-batch",
                      chunks > 1 ? ".chunk" : "");
  html += "</div>\n";
  return html;
}

// The collective columns of a row: how many, their time and its share of the busy time.
std::string collective_cells(int count, double time, double in_compute, double busy) {
  return fmt::format("<td>{}</td><td>{:g}</td><td>{:.1f}%</td>", count, time, busy > 0 ? 100 * in_compute / busy : 0.0);
}

std::string stats_table(const Timeline& t) {
  const TimelineStats stats = timeline_stats(t);
  const std::string unit = unit_name(t.unit);
  const bool collectives = has_collectives(t);
  // An elastic job's steps are counted as steps and stash nothing: F alone has no B to wait for.
  const bool elastic = is_elastic(t);
  const auto stash = [&](int peak) { return elastic ? std::string("\xe2\x80\x94") : fmt::format("{}", peak); };
  std::string html = "<table class=\"stats\">\n";
  html += fmt::format(
      "<tr><th>stage</th><th>{2}</th><th>busy ({0})</th><th>idle ({0})</th><th>bubble fraction</th>"
      "<th>peak stashed</th>{1}</tr>\n",
      xml_escape(unit),
      collectives ? fmt::format("<th>collectives</th><th>collective ({})</th><th>of busy</th>", xml_escape(unit)) : "",
      elastic ? "steps" : "F/B/W actions");
  int actions = 0;
  int peak = 0;
  double busy = 0;
  for (size_t s = 0; s < stats.stages.size(); ++s) {
    const StageStats& st = stats.stages[s];
    html += fmt::format("<tr><td>{}</td><td>{}</td><td>{:g}</td><td>{:g}</td><td>{:.3f}</td><td>{}</td>{}</tr>\n", s,
                        st.compute_actions, st.busy, st.idle, st.bubble_fraction, stash(st.peak_stashed),
                        collectives ? collective_cells(st.collectives, st.collective, st.collective_in_compute, st.busy)
                                    : "");
    actions += st.compute_actions;
    peak = std::max(peak, st.peak_stashed);
    busy += st.busy;
  }
  const double idle = static_cast<double>(stats.stages.size()) * stats.makespan - busy;
  html += fmt::format(
      "<tr class=\"all\"><td>all</td><td>{}</td><td>{:g}</td><td>{:g}</td><td>{:.3f}</td><td>{}</td>{}</tr>\n",
      actions, busy, idle, stats.bubble_fraction, elastic ? stash(peak) : fmt::format("max {}", peak),
      collectives ? collective_cells(stats.collectives, stats.collective, stats.collective_in_compute, busy) : "");
  html += "</table>\n";
  html += fmt::format("<p class=\"note\">makespan {:g} {}; bubble fraction = idle / (stages \xc3\x97 makespan).</p>\n",
                      stats.makespan, xml_escape(unit));
  return html;
}

}  // namespace

std::string render_html(const std::vector<Timeline>& timelines, const HtmlOptions& options) {
  std::string title = options.title;
  if (title.empty() && !timelines.empty() && is_elastic(timelines.front())) {
    title = "Elastic job: the steps of one rank and the membership changes";
  } else if (title.empty() && !timelines.empty()) {
    const Timeline& t = timelines.front();
    title = fmt::format("Pipeline schedule {} (p = {}, m = {}, v = {})", t.schedule.empty() ? "(parsed)" : t.schedule,
                        t.stages, t.micro_batches, t.chunks);
  }
  if (title.empty()) title = "Pipeline schedule";
  SvgOptions svg = options.svg;
  svg.standalone = false;

  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  bool collectives = false;
  for (const Timeline& t : timelines) collectives = collectives || has_collectives(t);
  const bool markers = any_markers(timelines);
  html += fmt::format("<title>{}</title>\n<style>\n{}{}{}</style>\n</head>\n<body>\n", xml_escape(title), kStyle,
                      collectives ? kCollectiveStyle : "", markers ? kMarkerStyle : "");
  html += fmt::format("<h1>{}</h1>\n", xml_escape(title));
  html += legend(timelines);
  for (const Timeline& t : timelines) {
    html += fmt::format("<section class=\"{}\">\n<h2>{}</h2>\n", xml_escape(t.source), xml_escape(heading_of(t)));
    html += "<div class=\"picture\">\n" + render_svg(t, svg) + "</div>\n";
    html += stats_table(t);
    html += "</section>\n";
  }
  if (all_elastic(timelines)) {
    html +=
        "<p class=\"note\">The row holds the training steps of one rank of an elastic job; each block is one step, "
        "labelled with its index, from its start to its finish. The light lane between blocks is time outside a "
        "step: recovery after a membership change, say. Hover over a block for its exact times.</p>\n";
  } else {
    html +=
        "<p class=\"note\">Each row is a stage; each block one forward (F), backward (B) or weight-gradient (W) "
        "pass of the micro-batch written on it, from its start to its finish. The light lane between blocks is idle "
        "time. Peak stashed: the most micro-batches whose activations a stage held at once (F done, B \xe2\x80\x94 "
        "or W \xe2\x80\x94 not yet). Hover over a block for its exact times.</p>\n";
  }
  if (collectives) {
    html +=
        "<p class=\"note\">The thin lane under a stage's row holds the collectives its F, B and W phases ran "
        "(operator parallel inside the stage, as its local rank 0 saw them), coloured by op; hover over one for its "
        "group, phase, micro-batch, chunk and duration. The figures' collective time counts concurrent collectives "
        "once; \"of busy\" is its part inside F, B and W over the busy time.</p>\n";
  }
  if (markers) {
    html +=
        "<p class=\"note\">A dashed line across all stages is a marker: a moment of the run, such as a change of an "
        "elastic job's membership. Its label is at the top, shortened when long or left out when crowded; hover over "
        "the line for all of it and its time.</p>\n";
  }
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace sf::pipeline
