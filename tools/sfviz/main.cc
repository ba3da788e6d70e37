// sfviz: pictures of pipeline schedules (docs/pipeline_viz.md). `plan` draws a schedule as the
// simulator times it; `show` draws a timeline the runtime measured, with --plan the planned one
// of the same schedule above it in the HTML page.
//
//     sfviz plan --schedule 1f1b --stages 4 --micro-batches 8 --svg 1f1b.svg --html 1f1b.html
//     sfviz plan --schedule-file my.txt --micro-batches 8 --trace my.trace.json
//     sfviz show step.timeline.json --plan --html step.html
//
// Both print the bubble fraction and the peak stash of every stage, for a timeline with
// collectives inside its stages their count, time and share of the compute, and a line per
// marker (an elastic job's membership changes, say). Exit status: 0, or 2 with a one-line
// message for bad input (unknown schedule, missing or malformed file).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <shardflow/core/cli_checks.h>
#include <shardflow/core/error.h>
#include <shardflow/core/text_file.h>
#include <shardflow/pipeline/render_html.h>
#include <shardflow/pipeline/render_svg.h>
#include <shardflow/pipeline/schedule.h>
#include <shardflow/pipeline/simulator.h>
#include <shardflow/pipeline/timeline.h>
#include <shardflow/pipeline/timeline_json.h>
#include <shardflow/pipeline/timeline_stats.h>

namespace sf::pipeline {
namespace {

// "F,B,W" or "F,B,W,T": the durations of forward, backward, weight pass and transfer.
ActionCosts parse_costs(const std::string& text) {
  std::vector<double> values;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    SF_ENFORCE(used == item.size() && !item.empty() && v >= 0, InvalidArgument,
               "--costs '{}': '{}' is not a duration (a number >= 0)", text, item);
    values.push_back(v);
  }
  SF_ENFORCE(values.size() == 3 || values.size() == 4, InvalidArgument,
             "--costs '{}': expected F,B,W or F,B,W,TRANSFER durations", text);
  SF_ENFORCE(values[0] > 0 && values[1] > 0 && values[2] > 0, InvalidArgument,
             "--costs '{}': F, B and W must take some time (> 0)", text);
  return {values[0], values[1], values[2], values.size() == 4 ? values[3] : 0.0};
}

void write_file(const std::string& path, const std::string& text) {
  write_text_file(path, text);
  fmt::print("wrote {}\n", path);
}

void print_stats(const Timeline& t) {
  const TimelineStats stats = timeline_stats(t);
  const std::string unit = unit_name(t.unit);
  fmt::print("{} p={} m={} v={} {}: makespan {:g} {}, bubble fraction {:.3f}\n",
             t.schedule.empty() ? "(parsed)" : t.schedule, t.stages, t.micro_batches, t.chunks, t.source,
             stats.makespan, unit, stats.bubble_fraction);
  const bool collectives = has_collectives(t);
  for (size_t s = 0; s < stats.stages.size(); ++s) {
    const StageStats& st = stats.stages[s];
    // The collective figures only where there are collectives: other timelines print as before.
    const std::string coll =
        collectives ? fmt::format(", {} collectives {:g} ({:.1f}% of busy)", st.collectives, st.collective,
                                  st.busy > 0 ? 100 * st.collective_in_compute / st.busy : 0.0)
                    : "";
    // An elastic job's steps are forward passes alone: there is no stash to speak of.
    const std::string stash = is_elastic(t) ? "" : fmt::format(", peak stashed {}", st.peak_stashed);
    fmt::print("  stage {}: busy {:g}, idle {:g}, bubble fraction {:.3f}{}{}\n", s, st.busy, st.idle,
               st.bubble_fraction, stash, coll);
  }
  if (collectives) {
    fmt::print("  collectives inside the stages: {} of them, {:g} {}, {:.1f}% of the compute time\n", stats.collectives,
               stats.collective, unit, 100 * stats.collective_share);
  }
  // In time order, as the picture shows them; a timeline without markers prints as before.
  std::vector<Marker> markers = t.markers;
  std::stable_sort(markers.begin(), markers.end(), [](const Marker& a, const Marker& b) { return a.time < b.time; });
  for (const Marker& m : markers) fmt::print("  marker at {:g} {}: {}\n", m.time, unit, m.label);
}

struct Outputs {
  std::string svg, html, trace;
  int width = 0;
};

void add_outputs(CLI::App& app, Outputs& out) {
  app.add_option("--svg", out.svg, "Write the picture as SVG");
  app.add_option("--html", out.html, "Write a self-contained HTML page with the picture(s) and the figures");
  app.add_option("--trace", out.trace, "Write a Chrome/Perfetto trace (chrome://tracing, ui.perfetto.dev)");
  app.add_option("--width", out.width, "Picture width in pixels (default: 1200 or more, so labels fit)")
      ->check(CLI::Range(300, 20000));
}

// `main` is the timeline the SVG and trace show; the page shows `page` (main last).
void write_outputs(const Outputs& out, const Timeline& main, const std::vector<Timeline>& page) {
  SvgOptions svg;
  svg.width = out.width;
  if (!out.svg.empty()) write_file(out.svg, render_svg(main, svg));
  if (!out.html.empty()) write_file(out.html, render_html(page, {.title = {}, .svg = svg}));
  if (!out.trace.empty()) write_file(out.trace, chrome_trace_json(main));
}

Timeline plan_timeline(const Schedule& schedule, const ActionCosts& costs) {
  return planned_timeline(schedule, simulate_schedule(schedule, costs));
}

int run(int argc, char** argv) {
  CLI::App app{"sfviz: pictures of pipeline schedules, planned and measured (docs/pipeline_viz.md)", "sfviz"};
  app.require_subcommand(1);

  std::string schedule, schedule_file, costs = "1,1,1", timeline_out;
  int stages = 0, micro_batches = 0, chunks = 1;
  Outputs plan_out;
  CLI::App* plan = app.add_subcommand("plan", "Draw a schedule as the simulator times it");
  auto* by_name = plan->add_option("--schedule", schedule, "gpipe, 1f1b, interleaved_1f1b or zb_h1");
  auto* by_file = plan->add_option("--schedule-file", schedule_file,
                                   "A schedule in text form: one line of actions per stage (docs/pipeline.md)");
  by_name->excludes(by_file);
  plan->add_option("--stages", stages, "p, the number of stages (taken from the file with --schedule-file)")
      ->check(sf::cli::kPositive);
  plan->add_option("--micro-batches", micro_batches, "m, micro-batches per step")
      ->required()
      ->check(sf::cli::kPositive);
  plan->add_option("--chunks", chunks, "v, model chunks per stage (interleaved_1f1b)")->check(sf::cli::kPositive);
  plan->add_option("--costs", costs, "Durations F,B,W[,TRANSFER] in simulator units (default 1,1,1)");
  plan->add_option("--timeline", timeline_out, "Write the planned timeline as JSON");
  add_outputs(*plan, plan_out);

  std::string measured_file;
  bool with_plan = false;
  Outputs show_out;
  CLI::App* show = app.add_subcommand("show", "Draw a timeline read from JSON (e.g. measured by the runtime)");
  show->add_option("timeline", measured_file, "Timeline JSON file")->required();
  show->add_flag("--plan", with_plan, "Also draw the planned timeline of the same schedule, p, m and v (HTML)");
  show->add_option("--costs", costs, "Durations F,B,W[,TRANSFER] for --plan (default 1,1,1)");
  add_outputs(*show, show_out);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "sfviz: error: {}\n", e.what());
    return 2;
  }

  const ActionCosts action_costs = parse_costs(costs);
  if (*plan) {
    Schedule s;
    if (!schedule_file.empty()) {
      s = parse_schedule(read_text_file(schedule_file), micro_batches, chunks);
      SF_ENFORCE(stages == 0 || stages == s.stages, InvalidArgument, "--stages {} but '{}' has {} stage lines", stages,
                 schedule_file, s.stages);
    } else {
      SF_ENFORCE(!schedule.empty(), InvalidArgument, "plan needs --schedule NAME or --schedule-file FILE");
      SF_ENFORCE(stages > 0, InvalidArgument, "plan --schedule needs --stages");
      s = make_schedule(schedule_kind(schedule), stages, micro_batches, chunks);
    }
    const Timeline planned = plan_timeline(s, action_costs);
    print_stats(planned);
    if (!timeline_out.empty()) {
      write_file(timeline_out, timeline_to_json(planned));
    }
    write_outputs(plan_out, planned, {planned});
    return 0;
  }

  const Timeline measured = read_timeline_file(measured_file);
  std::vector<Timeline> page;
  if (with_plan) {
    SF_ENFORCE(!measured.schedule.empty(), InvalidArgument,
               "'{}' names no schedule, so --plan cannot make the planned one", measured_file);
    SF_ENFORCE(!is_elastic(measured), InvalidArgument,
               "'{}' is an elastic job's steps, which have no planned timeline to draw with --plan", measured_file);
    page.push_back(plan_timeline(
        make_schedule(schedule_kind(measured.schedule), measured.stages, measured.micro_batches, measured.chunks),
        action_costs));
    print_stats(page.back());
  }
  print_stats(measured);
  page.push_back(measured);
  write_outputs(show_out, measured, page);
  return 0;
}

}  // namespace
}  // namespace sf::pipeline

int main(int argc, char** argv) {
  try {
    return sf::pipeline::run(argc, argv);
  } catch (const sf::Error& e) {
    fmt::print(stderr, "sfviz: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "sfviz: error: {}\n", e.what());
    return 2;
  }
}
