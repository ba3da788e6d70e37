// Tests for markers in timelines (pipeline/timeline.h) and an elastic job's timeline: markers
// round-trip through the JSON form and are written only when there are some, malformed ones are
// refused naming the marker and what is wrong (on reading and on writing), each is a global
// instant event of the trace, a dashed line across all stages in the SVG with its label escaped
// (shortened, whole in the tooltip) and an entry of the HTML page's legend, and the time axis
// reaches every marker. A timeline of one rank's steps (schedule "elastic", one stage, F spans)
// reads and draws, titled by steps and membership changes.
#include <shardflow/pipeline/timeline.h>

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <shardflow/core/error.h>
#include <shardflow/pipeline/render_html.h>
#include <shardflow/pipeline/render_svg.h>
#include <shardflow/pipeline/simulator.h>
#include <shardflow/pipeline/timeline_json.h>

namespace sf::pipeline {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace timeline_markers_test {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

Span span(const char* text, double start, double finish) { return Span{parse_action(text), start, finish}; }

// Two stages, 1F1B over two micro-batches, in microseconds, and two markers: one inside the
// spans, one after them.
Timeline pipeline_with_markers() {
  Timeline t;
  t.schedule = "1f1b";
  t.source = "measured";
  t.unit = "us";
  t.stages = 2;
  t.micro_batches = 2;
  t.chunks = 1;
  t.spans = {{span("F0", 0, 100), span("F1", 100, 200), span("B0", 300, 400), span("B1", 500, 600)},
             {span("F0", 100, 200), span("B0", 200, 300), span("F1", 300, 400), span("B1", 400, 500)}};
  t.markers = {{250, "generation 1: lost rank 2; 4 -> 3 ranks; rolled back to step 17"},
               {800, "generation 2: <a & \"b\">"}};
  return t;
}

// One rank's steps as the elastic trainer writes them: step k a span of F k, and the
// membership changes as markers.
Timeline elastic_timeline() {
  Timeline t;
  t.schedule = std::string(kElasticSchedule);
  t.source = "measured";
  t.unit = "us";
  t.stages = 1;
  t.micro_batches = 5;
  t.chunks = 1;
  // Steps 0 to 2, a kill after step 2, then steps 2 to 3 again after the roll-back to step 2.
  t.spans = {{span("F0", 0, 1000), span("F1", 1000, 2000), span("F2", 2000, 3000), span("F2", 4500, 5500),
              span("F3", 5500, 6500), span("F4", 6500, 7500)}};
  t.markers = {{4000, "generation 1: lost rank 2; 4 -> 3 ranks; rolled back to step 2"}};
  return t;
}

std::string error_of(const std::string& text) {
  try {
    timeline_from_json(text, "step.json");
  } catch (const IoError& e) {
    return e.what();
  }
  return "(no error)";
}

// The timeline JSON of pipeline_with_markers with `markers` as its markers field.
std::string with_markers(const std::string& markers) {
  Timeline t = pipeline_with_markers();
  t.markers.clear();
  std::string text = timeline_to_json(t);
  text.insert(text.rfind('}'), ",\"markers\": " + markers);
  return text;
}

TEST(TimelineJson, RoundTripsMarkersOnePerLineAndWritesNoneWhenThereAreNone) {
  const Timeline t = pipeline_with_markers();
  const std::string text = timeline_to_json(t);
  EXPECT_NE(text.find("\n\"markers\": [\n {\"time\":250.0,\"label\":\"generation 1: lost rank 2; 4 -> 3 ranks; "
                      "rolled back to step 17\"},\n {\"time\":800.0,\"label\":\"generation 2: <a & \\\"b\\\">\"}]}\n"),
            std::string::npos)
      << text;
  const Timeline back = timeline_from_json(text);
  ASSERT_EQ(back.markers.size(), 2u);
  EXPECT_EQ(back.markers[0].time, 250);
  EXPECT_EQ(back.markers[0].label, t.markers[0].label);
  EXPECT_EQ(back.markers[1].label, "generation 2: <a & \"b\">");
  EXPECT_EQ(timeline_to_json(back), text);
  // Without markers the file is what it always was, and reads back with none.
  Timeline plain = t;
  plain.markers.clear();
  const std::string plain_text = timeline_to_json(plain);
  EXPECT_EQ(plain_text.find("markers"), std::string::npos);
  EXPECT_TRUE(timeline_from_json(plain_text).markers.empty());
  // An empty list reads as none; an integer time and an empty label are fine.
  EXPECT_TRUE(timeline_from_json(with_markers("[]")).markers.empty());
  const Timeline read = timeline_from_json(with_markers(R"([{"time": 3, "label": ""}])"));
  ASSERT_EQ(read.markers.size(), 1u);
  EXPECT_EQ(read.markers[0].time, 3);
  EXPECT_EQ(read.markers[0].label, "");
}

TEST(TimelineJson, RefusesBadMarkersNamingTheMarkerAndField) {
  const std::string ok = R"({"time": 1, "label": "ok"})";
  EXPECT_EQ(error_of(with_markers("[" + ok + "]")), "(no error)");
  const auto second = [&](const std::string& entry) { return error_of(with_markers("[" + ok + ", " + entry + "]")); };
  EXPECT_NE(error_of(with_markers("{}")).find("step.json: 'markers' is object, not an array"), std::string::npos);
  EXPECT_NE(second("7").find("step.json: marker 1 is not an object"), std::string::npos);
  EXPECT_NE(second(R"({"label": "x"})").find("step.json: marker 1 has no field 'time'"), std::string::npos);
  EXPECT_NE(second(R"({"time": "soon", "label": "x"})").find("marker 1 field 'time' is \"soon\", not a number"),
            std::string::npos);
  EXPECT_NE(second(R"({"time": true, "label": "x"})").find("marker 1 field 'time' is true, not a number"),
            std::string::npos);
  EXPECT_NE(second(R"({"time": -0.5, "label": "x"})").find("marker 1 has time -0.5, not a finite time >= 0"),
            std::string::npos);
  // JSON has no infinity: a number too large for a double is not JSON to this reader.
  EXPECT_NE(second(R"({"time": 1e999, "label": "x"})").find("step.json: not JSON"), std::string::npos);
  EXPECT_NE(second(R"({"time": 1})").find("step.json: marker 1 has no field 'label'"), std::string::npos);
  EXPECT_NE(second(R"({"time": 1, "label": 5})").find("marker 1 field 'label' is 5, not the expected type"),
            std::string::npos);
  const std::string long_label = std::string(kMaxMarkerLabel + 1, 'x');
  EXPECT_NE(second(R"({"time": 1, "label": ")" + long_label + "\"}").find("marker 1 label is 201 bytes, over 200"),
            std::string::npos);
  EXPECT_EQ(second(R"({"time": 1, "label": ")" + std::string(kMaxMarkerLabel, 'x') + "\"}"), "(no error)");
  EXPECT_NE(second(R"({"time": 1, "label": "two\nlines"})").find("marker 1 label has the control character 0x0a"),
            std::string::npos);
  // Each refusal is one line.
  EXPECT_EQ(second(R"({"time": 1, "label": "two\nlines"})").find('\n'), std::string::npos);
}

TEST(TimelineJson, RefusesToWriteMarkersTheReaderWouldRefuse) {
  const auto refused = [](Marker m) {
    Timeline t = pipeline_with_markers();
    t.markers.push_back(std::move(m));
    EXPECT_THROW(chrome_trace_json(t), InvalidArgument);
    try {
      timeline_to_json(t);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(refused({-1, "x"}).find("timeline: marker 2 has time -1, not a finite time >= 0"), std::string::npos);
  EXPECT_NE(refused({std::numeric_limits<double>::quiet_NaN(), "x"}).find("marker 2 has time nan"), std::string::npos);
  EXPECT_NE(refused({std::numeric_limits<double>::infinity(), "x"}).find("marker 2 has time inf"), std::string::npos);
  EXPECT_NE(refused({1, std::string(kMaxMarkerLabel + 1, 'x')}).find("marker 2 label is 201 bytes, over 200"),
            std::string::npos);
  EXPECT_NE(refused({1, "tab\there"}).find("marker 2 label has the control character 0x09"), std::string::npos);
  EXPECT_NE(refused({1, "\xff\xfe"}).find("marker 2 label is not UTF-8"), std::string::npos);
}

TEST(TimelineJson, ReadsAnElasticTimelineOfOneRanksSteps) {
  const Timeline t = elastic_timeline();
  EXPECT_TRUE(is_elastic(t));
  EXPECT_FALSE(is_elastic(pipeline_with_markers()));
  const Timeline back = timeline_from_json(timeline_to_json(t), "rank2.timeline.json");
  EXPECT_TRUE(is_elastic(back));
  EXPECT_EQ(back.stages, 1);
  ASSERT_EQ(back.spans.size(), 1u);
  ASSERT_EQ(back.spans[0].size(), 6u);  // step 2 twice: once before the roll-back, once after
  EXPECT_EQ(back.spans[0][3].action, parse_action("F2"));
  EXPECT_EQ(back.spans[0][3].start, 4500);
  ASSERT_EQ(back.markers.size(), 1u);
  EXPECT_EQ(back.markers[0].time, 4000);
  // A step index must stay below micro_batches, as a micro-batch's must.
  Timeline over = t;
  over.micro_batches = 4;
  EXPECT_NE(error_of(timeline_to_json(over)).find("stage 0 span 5 'F4' is outside 4 micro-batches"),
            std::string::npos);
}

TEST(ChromeTrace, MarkersAreGlobalInstantEventsInMicroseconds) {
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace_json(pipeline_with_markers()));
  std::vector<nlohmann::json> instants;
  int x = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "i") instants.push_back(e);
    if (e.at("ph") == "X") ++x;
  }
  EXPECT_EQ(x, 8);
  ASSERT_EQ(instants.size(), 2u);
  EXPECT_EQ(instants[0].at("name"), "generation 1: lost rank 2; 4 -> 3 ranks; rolled back to step 17");
  EXPECT_EQ(instants[0].at("s"), "g");
  EXPECT_EQ(instants[0].at("cat"), "marker");
  EXPECT_EQ(instants[0].at("ts"), 250.0);
  EXPECT_EQ(instants[1].at("name"), "generation 2: <a & \"b\">");
  EXPECT_EQ(instants[1].at("ts"), 800.0);
  // A planned timeline's unit is 1000 us there, for markers as for spans.
  const Schedule s = make_schedule(ScheduleKind::kOneFOneB, 2, 2);
  Timeline planned = planned_timeline(s, simulate_schedule(s));
  planned.markers = {{2.5, "half way"}};
  const nlohmann::json planned_trace = nlohmann::json::parse(chrome_trace_json(planned));
  bool found = false;
  for (const auto& e : planned_trace.at("traceEvents")) {
    if (e.at("ph") != "i") continue;
    found = true;
    EXPECT_EQ(e.at("ts"), 2500.0);
  }
  EXPECT_TRUE(found);
  // Without markers, no instant events.
  planned.markers.clear();
  EXPECT_EQ(chrome_trace_json(planned).find("\"ph\":\"i\""), std::string::npos);
}

TEST(RenderSvg, MarkersAreDashedLinesAcrossAllStagesWithEscapedLabels) {
  const Timeline t = pipeline_with_markers();
  const std::string svg = render_svg(t);
  EXPECT_EQ(count(svg, "<g class=\"marker\">"), 2);
  EXPECT_EQ(count(svg, "stroke-dasharray=\"5,3\""), 2);
  EXPECT_EQ(count(svg, fmt::format("stroke=\"{}\"", marker_colour())), 2);
  EXPECT_NE(marker_colour(), collective_colour("ReduceScatter"));
  // The labels, escaped, in the picture and in the tooltips.
  EXPECT_NE(svg.find("<title>marker at 800 \xc2\xb5s: generation 2: &lt;a &amp; &quot;b&quot;&gt;</title>"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find(">generation 2: &lt;a &amp; &quot;b&quot;&gt;</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("<a &"), std::string::npos);
  EXPECT_NE(svg.find(">generation 1: lost rank 2; 4 -&gt; 3 ranks; rolled\xe2\x80\xa6</text>"),
            std::string::npos);
  // The line runs from the top of the label band over both stages' rows down to the axis.
  const size_t line = svg.find("<line ", svg.find("<g class=\"marker\">"));
  ASSERT_NE(line, std::string::npos);
  EXPECT_NE(svg.find("y1=\"64\"", line), std::string::npos);
  const std::string axis_line = "<g class=\"axis\">\n<line x1=\"70\" y1=\"";
  const size_t axis = svg.find(axis_line);
  ASSERT_NE(axis, std::string::npos);
  const size_t y_at = axis + axis_line.size();
  const std::string axis_y = svg.substr(y_at, svg.find('"', y_at) - y_at);
  EXPECT_NE(svg.find(fmt::format("y2=\"{}\" stroke=\"{}\"", axis_y, marker_colour()), line), std::string::npos)
      << svg;
  EXPECT_EQ(count(svg, "class=\"blk "), 8);
  // Without markers the picture is what it always was: no band, no line.
  Timeline plain = t;
  plain.markers.clear();
  const std::string plain_svg = render_svg(plain);
  EXPECT_EQ(plain_svg.find("marker"), std::string::npos);
  EXPECT_EQ(plain_svg.find("stroke-dasharray"), std::string::npos);
}

TEST(RenderSvg, TheTimeAxisReachesMarkersOutsideTheSpans) {
  Timeline t = pipeline_with_markers();
  SvgOptions o;
  o.width = 1220;  // a 1000 px lane from x = 70
  const std::string svg = render_svg(t, o);
  // Spans end at 600 us, the last marker is at 800 us: the lane spans 0..800 us, so the marker is
  // at its right end and the spans' end three quarters of the way.
  EXPECT_NE(svg.find("<line x1=\"1070.00\" y1=\"64\" x2=\"1070.00\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("<line x1=\"382.50\" y1=\"64\" x2=\"382.50\""), std::string::npos) << svg;  // 250 us
  EXPECT_NE(svg.find(">800</text>"), std::string::npos) << svg;                                   // an axis tick
  // The figures are the spans' still: the makespan is 600 us.
  EXPECT_NE(svg.find("makespan 600 \xc2\xb5s"), std::string::npos);
  // A marker before the first span widens the range to the left likewise.
  t.spans = {{span("F0", 1000, 1100), span("F1", 1100, 1200), span("B0", 1300, 1400), span("B1", 1500, 1600)},
             {span("F0", 1100, 1200), span("B0", 1200, 1300), span("F1", 1300, 1400), span("B1", 1400, 1500)}};
  t.markers = {{600, "early"}};
  const std::string early = render_svg(t, o);
  EXPECT_NE(early.find("<line x1=\"70.00\" y1=\"64\" x2=\"70.00\""), std::string::npos) << early;
  EXPECT_NE(early.find(">600</text>"), std::string::npos) << early;
  // Markers alone, no spans: drawn over their own range.
  t.spans = {{}, {}};
  t.markers = {{10, "a"}, {20, "b"}};
  const std::string alone = render_svg(t, o);
  EXPECT_EQ(count(alone, "<g class=\"marker\">"), 2);
  EXPECT_NE(alone.find("<line x1=\"1070.00\" y1=\"64\""), std::string::npos) << alone;
}

TEST(RenderSvg, LongMarkerLabelsAreShortenedButWholeInTheTooltip) {
  Timeline t = pipeline_with_markers();
  const std::string long_label = "generation 12: lost ranks 3, 5 and 7; 16 -> 13 ranks; rolled back to step 1700";
  // Multi-byte characters around the cut must not be split.
  const std::string accents = std::string(46, 'a') + "\xc3\xa9\xc3\xa9\xc3\xa9";
  t.markers = {{100, long_label}, {500, accents}};
  const std::string svg = render_svg(t);
  EXPECT_NE(svg.find(fmt::format("<title>marker at 100 \xc2\xb5s: {}</title>", xml_escape(long_label))),
            std::string::npos);
  // 47 characters and an ellipsis.
  EXPECT_NE(svg.find(">" + xml_escape(long_label.substr(0, 47)) + "\xe2\x80\xa6</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find(xml_escape(long_label) + "</text>"), std::string::npos);
  EXPECT_NE(svg.find(">" + std::string(46, 'a') + "\xc3\xa9\xe2\x80\xa6</text>"), std::string::npos) << svg;
  // 48 characters, 51 bytes: short enough as it is.
  t.markers = {{100, std::string(45, 'a') + "\xc3\xa9\xc3\xa9\xc3\xa9"}};
  EXPECT_NE(render_svg(t).find(">" + t.markers[0].label + "</text>"), std::string::npos);
}

TEST(RenderSvg, CrowdedMarkerLabelsTakeFurtherLinesThenOnlyTheirTooltip) {
  Timeline t = pipeline_with_markers();
  t.markers.clear();
  for (int i = 0; i < 5; ++i) t.markers.push_back({100.0 + i, fmt::format("change {}", i)});
  SvgOptions o;
  o.width = 1220;
  const std::string svg = render_svg(t, o);
  EXPECT_EQ(count(svg, "<g class=\"marker\">"), 5);
  EXPECT_EQ(count(svg, "<title>marker at "), 5);
  // Three lines of labels (baselines 75, 89 and 103), then no room: two labels left out.
  for (int i = 0; i < 3; ++i) EXPECT_NE(svg.find(fmt::format(">change {}</text>", i)), std::string::npos) << i;
  EXPECT_NE(svg.find("y=\"103\" font-size=\"11\""), std::string::npos);
  EXPECT_EQ(svg.find(">change 3</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">change 4</text>"), std::string::npos);
  // The rows start under the three lines: 64 + 3 x 14 + 4.
  EXPECT_NE(svg.find("<rect class=\"lane\" x=\"70\" y=\"110\""), std::string::npos) << svg;
  // A label that would run past the picture's right edge is drawn to the left of its line; a
  // short one still fits to the right, over the rows' figures.
  t.markers = {{600, "the end of the job: every rank stopped"}};
  EXPECT_NE(render_svg(t, o).find("<text x=\"1067.00\" y=\"75\" font-size=\"11\" fill=\"" + marker_colour() +
                                  "\" text-anchor=\"end\">the end of the job: every rank stopped</text>"),
            std::string::npos)
      << render_svg(t, o);
  t.markers = {{600, "the end"}};
  EXPECT_NE(render_svg(t, o).find("<text x=\"1073.00\" y=\"75\" font-size=\"11\" fill=\"" + marker_colour() +
                                  "\">the end</text>"),
            std::string::npos);
}

TEST(RenderSvg, AnElasticTimelineIsTitledByStepsAndMembershipChanges) {
  const Timeline t = elastic_timeline();
  const std::string svg = render_svg(t);
  EXPECT_NE(svg.find(">elastic \xc2\xb7 the steps of one rank, 6 steps \xc2\xb7 measured</text>"), std::string::npos)
      << svg;
  EXPECT_NE(svg.find("busy 80.0% \xc2\xb7 makespan 7.5 ms \xc2\xb7 1 membership change</text>"), std::string::npos)
      << svg;
  EXPECT_EQ(svg.find("stash"), std::string::npos);
  EXPECT_NE(svg.find(">steps</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title>step 2: start 4500, finish 5500 \xc2\xb5s</title>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"blk F\""), 6);
  EXPECT_EQ(count(svg, "<g class=\"marker\">"), 1);
  EXPECT_NE(svg.find(">generation 1: lost rank 2; 4 -&gt; 3 ranks; rolled\xe2\x80\xa6</text>"),
            std::string::npos)
      << svg;
}

TEST(RenderHtml, MarkersGetALegendEntryAndANoteOnlyWhenThereAreAny) {
  const Timeline t = pipeline_with_markers();
  const std::string html = render_html({t});
  EXPECT_EQ(count(html, "<g class=\"marker\">"), 2);
  EXPECT_NE(html.find("marker (its label at the top)"), std::string::npos);
  EXPECT_NE(html.find("A dashed line across all stages is a marker"), std::string::npos);
  EXPECT_NE(html.find("g.marker:hover line"), std::string::npos);
  EXPECT_NE(html.find("&lt;a &amp; &quot;b&quot;&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<a &"), std::string::npos);
  for (const char* banned : {"http:", "https:", "<script", "<link", "<img", "src=", "href=", "@import", "url("}) {
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  }
  Timeline plain = t;
  plain.markers.clear();
  EXPECT_EQ(render_html({plain}).find("mark"), std::string::npos);
  // A page of an elastic timeline calls its blocks steps.
  const std::string elastic = render_html({elastic_timeline()});
  EXPECT_NE(elastic.find("<h1>Elastic job: the steps of one rank and the membership changes</h1>"), std::string::npos);
  EXPECT_NE(elastic.find("Measured: the steps of one rank of an elastic job, in \xc2\xb5s"), std::string::npos);
  EXPECT_NE(elastic.find("</span>step</span>"), std::string::npos) << elastic;
  EXPECT_NE(elastic.find("labels: step</span>"), std::string::npos);
  EXPECT_NE(elastic.find("<th>steps</th>"), std::string::npos);
  EXPECT_EQ(elastic.find("F forward"), std::string::npos);
  EXPECT_EQ(elastic.find("max 6"), std::string::npos);
}

}  // namespace timeline_markers_test
}  // namespace
}  // namespace sf::pipeline
