// Tests for timelines and their pictures (pipeline/timeline*.h, pipeline/render_*.h): the
// planned timeline carries the simulator's times, its figures equal the simulator's for every
// schedule and cost model, a measured-looking timeline's figures follow the definitions, the
// JSON form round-trips and refuses bad files naming the problem, the trace has one X event
// per span, and the SVG and HTML hold exactly one block per compute action. Collectives inside
// the stages round-trip, are refused when malformed, count once in the figures, get their own
// trace thread and a lane in the picture, and leave every output of a timeline without any as
// it was.
#include <shardflow/pipeline/timeline.h>

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <shardflow/core/error.h>
#include <shardflow/pipeline/render_html.h>
#include <shardflow/pipeline/render_svg.h>
#include <shardflow/pipeline/simulator.h>
#include <shardflow/pipeline/timeline_json.h>
#include <shardflow/pipeline/timeline_stats.h>

namespace sf::pipeline {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace timeline_test {

struct Case {
  ScheduleKind kind;
  int p, m, v;
};

const Case kCases[] = {
    {ScheduleKind::kGPipe, 4, 8, 1},           {ScheduleKind::kOneFOneB, 4, 8, 1},
    {ScheduleKind::kOneFOneB, 3, 7, 1},        {ScheduleKind::kOneFOneB, 2, 4, 1},
    {ScheduleKind::kInterleaved1F1B, 4, 8, 2}, {ScheduleKind::kInterleaved1F1B, 2, 4, 3},
    {ScheduleKind::kZeroBubbleH1, 4, 8, 1},    {ScheduleKind::kZeroBubbleH1, 3, 5, 1},
};
const ActionCosts kCostModels[] = {{1, 1, 1, 0}, {1, 2, 1, 0}, {1, 1, 0.5, 0}, {0.7, 1.3, 0.4, 0}};

std::string name_of(const Case& c) { return fmt::format("{} p{} m{} v{}", schedule_name(c.kind), c.p, c.m, c.v); }

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

int compute_actions(const Timeline& t) {
  int n = 0;
  for (const auto& stage : t.spans) {
    for (const Span& s : stage) n += is_compute(s.action.kind) ? 1 : 0;
  }
  return n;
}

// A timeline as the runtime might measure it: microseconds from the step's start (the first
// action at 100 us), uneven durations, sends and receives, 2 stages, 2 micro-batches.
Timeline measured_example() {
  Timeline t;
  t.schedule = "1f1b";
  t.source = "measured";
  t.unit = "us";
  t.stages = 2;
  t.micro_batches = 2;
  t.chunks = 1;
  const auto span = [](const char* text, double start, double finish) {
    return Span{parse_action(text), start, finish};
  };
  t.spans = {
      {span("F0", 100, 200), span("SEND_F0", 200, 201), span("F1", 201, 301), span("SEND_F1", 301, 302),
       span("RECV_B0", 302, 520), span("B0", 520, 720), span("RECV_B1", 720, 760), span("B1", 760, 960)},
      {span("RECV_F0", 100, 205), span("F0", 205, 310), span("B0", 310, 515), span("SEND_B0", 515, 516),
       span("RECV_F1", 516, 517), span("F1", 517, 620), span("B1", 620, 755.5), span("SEND_B1", 755.5, 756)},
  };
  return t;
}

// measured_example with collectives inside its stages, as a 2-way tensor-parallel run records
// them: on stage 0 two concurrent ones in F0 (150..165 together), one in B0 and one in F1 that
// outlasts F1 by 4 us; on stage 1 one in F0.
Timeline with_collectives() {
  Timeline t = measured_example();
  t.collectives = {
      {{"AllReduce", "0-1", 0, 0, 'F', 150, 160},
       {"ReduceScatter", "0-1", 0, 0, 'F', 155, 165},
       {"AllReduce", "0-1", 1, 0, 'F', 300, 305},
       {"AllGather", "0-1", 0, 0, 'B', 600, 610.5}},
      {{"AllReduce", "0-1", 0, 0, 'F', 210, 220}},
  };
  return t;
}

int collective_count(const Timeline& t) {
  int n = 0;
  for (const auto& stage : t.collectives) n += static_cast<int>(stage.size());
  return n;
}

TEST(PlannedTimeline, HoldsEachActionAtTheSimulatorsTimes) {
  for (const Case& c : kCases) {
    const Schedule s = make_schedule(c.kind, c.p, c.m, c.v);
    const SimulationResult r = simulate_schedule(s, {1, 2, 1});
    const Timeline t = planned_timeline(s, r);
    EXPECT_EQ(t.schedule, s.name);
    EXPECT_EQ(t.source, "planned");
    EXPECT_EQ(t.unit, "unit");
    EXPECT_EQ(t.stages, c.p);
    EXPECT_EQ(t.micro_batches, c.m);
    EXPECT_EQ(t.chunks, c.v);
    ASSERT_EQ(t.spans.size(), static_cast<size_t>(c.p)) << name_of(c);
    for (int stage = 0; stage < c.p; ++stage) {
      ASSERT_EQ(t.spans[stage].size(), s.actions[stage].size()) << name_of(c) << " stage " << stage;
      for (size_t i = 0; i < s.actions[stage].size(); ++i) {
        EXPECT_EQ(t.spans[stage][i].action, s.actions[stage][i]);
        EXPECT_EQ(t.spans[stage][i].start, r.stages[stage].start[i]);
        EXPECT_EQ(t.spans[stage][i].finish, r.stages[stage].finish[i]);
      }
    }
  }
}

TEST(PlannedTimeline, RefusesAResultOfAnotherSchedule) {
  const Schedule a = make_schedule(ScheduleKind::kOneFOneB, 4, 8);
  const Schedule b = make_schedule(ScheduleKind::kOneFOneB, 2, 8);
  EXPECT_THROW(planned_timeline(a, simulate_schedule(b)), InvalidArgument);
}

TEST(TimelineStats, EqualTheSimulatorsFiguresForEveryScheduleAndCostModel) {
  for (const Case& c : kCases) {
    for (const ActionCosts& costs : kCostModels) {
      const Schedule s = make_schedule(c.kind, c.p, c.m, c.v);
      const SimulationResult r = simulate_schedule(s, costs);
      const TimelineStats st = timeline_stats(planned_timeline(s, r));
      const std::string what =
          fmt::format("{} costs {},{},{}", name_of(c), costs.forward, costs.backward, costs.weight);
      EXPECT_DOUBLE_EQ(st.start, 0) << what;
      EXPECT_NEAR(st.makespan, r.makespan, 1e-9) << what;
      EXPECT_NEAR(st.bubble_fraction, r.bubble_fraction, 1e-12) << what;
      ASSERT_EQ(st.stages.size(), r.stages.size()) << what;
      for (int stage = 0; stage < c.p; ++stage) {
        EXPECT_NEAR(st.stages[stage].busy, r.stages[stage].busy, 1e-9) << what << " stage " << stage;
        EXPECT_NEAR(st.stages[stage].bubble_fraction, r.stages[stage].bubble_fraction, 1e-12)
            << what << " stage " << stage;
        EXPECT_EQ(st.stages[stage].peak_stashed, r.stages[stage].peak_stashed) << what << " stage " << stage;
        EXPECT_NEAR(st.stages[stage].idle, r.makespan - r.stages[stage].busy, 1e-9) << what << " stage " << stage;
      }
    }
  }
}

TEST(TimelineStats, TheTheoryFor1F1BWithUnitCosts) {
  const Schedule s = make_schedule(ScheduleKind::kOneFOneB, 4, 8);
  const TimelineStats st = timeline_stats(planned_timeline(s, simulate_schedule(s)));
  EXPECT_DOUBLE_EQ(st.makespan, 22);
  EXPECT_NEAR(st.bubble_fraction, 3.0 / 11, 1e-12);
  for (int stage = 0; stage < 4; ++stage) {
    EXPECT_EQ(st.stages[stage].peak_stashed, 4 - stage);
    EXPECT_EQ(st.stages[stage].compute_actions, 16);
    EXPECT_DOUBLE_EQ(st.stages[stage].busy, 16);
    EXPECT_DOUBLE_EQ(st.stages[stage].idle, 6);
  }
}

TEST(TimelineStats, MeasuredTimelineCountsComputeAsBusyFromTheEarliestStart) {
  const TimelineStats st = timeline_stats(measured_example());
  EXPECT_DOUBLE_EQ(st.start, 100);
  EXPECT_DOUBLE_EQ(st.finish, 960);
  EXPECT_DOUBLE_EQ(st.makespan, 860);
  // Stage 0: F 100 + 100, B 200 + 200; receives and sends are idle.
  EXPECT_DOUBLE_EQ(st.stages[0].busy, 600);
  EXPECT_DOUBLE_EQ(st.stages[0].idle, 260);
  EXPECT_DOUBLE_EQ(st.stages[1].busy, 105 + 205 + 103 + 135.5);
  EXPECT_NEAR(st.stages[0].bubble_fraction, 260.0 / 860, 1e-12);
  EXPECT_NEAR(st.bubble_fraction, 1 - (600 + 548.5) / (2 * 860.0), 1e-12);
  EXPECT_EQ(st.stages[0].peak_stashed, 2);  // F0 F1 before B0
  EXPECT_EQ(st.stages[1].peak_stashed, 1);  // F0 B0 F1 B1
  EXPECT_EQ(st.stages[0].compute_actions, 4);
}

TEST(TimelineStats, StashWalksTimeNotListOrderAndCountsChunksApart) {
  Timeline t;
  t.source = "measured";
  t.unit = "us";
  t.stages = 1;
  t.micro_batches = 2;
  t.chunks = 2;
  // Recorded out of order; in time: F0 F0.1 F1 B0.1 B0 B1 B1.1 ... and F1.1 last-but-two.
  t.spans = {{{parse_action("B0"), 40, 50},
              {parse_action("F0"), 0, 10},
              {parse_action("F0.1"), 10, 20},
              {parse_action("F1"), 20, 30},
              {parse_action("B0.1"), 30, 40},
              {parse_action("F1.1"), 50, 60},
              {parse_action("B1.1"), 60, 70},
              {parse_action("B1"), 70, 80}}};
  EXPECT_EQ(timeline_stats(t).stages[0].peak_stashed, 3);
}

TEST(TimelineStats, WeightPassReleasesTheStashWhenTheTimelineHasOne) {
  const Schedule s = make_schedule(ScheduleKind::kZeroBubbleH1, 4, 8);
  const TimelineStats st = timeline_stats(planned_timeline(s, simulate_schedule(s)));
  // ZB-H1 keeps 1F1B's in-flight forwards, but a stage holds a micro-batch until its W.
  EXPECT_EQ(st.stages[3].peak_stashed, 4);
}

TEST(TimelineStats, CollectivesCountOnceWhenConcurrentAndOnlyInsideComputeForTheShare) {
  const TimelineStats st = timeline_stats(with_collectives());
  const TimelineStats plain = timeline_stats(measured_example());
  EXPECT_EQ(st.stages[0].collectives, 4);
  EXPECT_DOUBLE_EQ(st.stages[0].collective, 15 + 5 + 10.5);  // 150..165, 300..305, 600..610.5
  EXPECT_DOUBLE_EQ(st.stages[0].collective_in_compute, 15 + 1 + 10.5);  // F1 ends at 301
  EXPECT_EQ(st.stages[1].collectives, 1);
  EXPECT_DOUBLE_EQ(st.stages[1].collective, 10);
  EXPECT_DOUBLE_EQ(st.stages[1].collective_in_compute, 10);
  EXPECT_EQ(st.collectives, 5);
  EXPECT_DOUBLE_EQ(st.collective, 40.5);
  EXPECT_DOUBLE_EQ(st.collective_in_compute, 36.5);
  EXPECT_NEAR(st.collective_share, 36.5 / (600 + 548.5), 1e-12);
  // They move nothing else.
  EXPECT_EQ(st.makespan, plain.makespan);
  EXPECT_EQ(st.bubble_fraction, plain.bubble_fraction);
  EXPECT_EQ(st.stages[0].busy, plain.stages[0].busy);
  EXPECT_EQ(plain.collectives, 0);
  EXPECT_EQ(plain.collective, 0);
  EXPECT_EQ(plain.collective_share, 0);
}

TEST(TimelineStats, EmptyTimelineHasNoMakespan) {
  Timeline t;
  t.stages = 2;
  t.spans.resize(2);
  const TimelineStats st = timeline_stats(t);
  EXPECT_EQ(st.makespan, 0);
  EXPECT_EQ(st.bubble_fraction, 0);
  EXPECT_EQ(st.stages.size(), 2u);
}

void expect_same_collectives(const Timeline& a, const Timeline& b) {
  ASSERT_EQ(has_collectives(a), has_collectives(b));
  if (!has_collectives(a)) return;
  ASSERT_EQ(a.collectives.size(), b.collectives.size());
  for (size_t s = 0; s < a.collectives.size(); ++s) {
    ASSERT_EQ(a.collectives[s].size(), b.collectives[s].size()) << "stage " << s;
    for (size_t i = 0; i < a.collectives[s].size(); ++i) {
      const CollectiveSpan& x = a.collectives[s][i];
      const CollectiveSpan& y = b.collectives[s][i];
      const std::string where = fmt::format("stage {} collective {}", s, i);
      EXPECT_EQ(x.op, y.op) << where;
      EXPECT_EQ(x.group, y.group) << where;
      EXPECT_EQ(x.micro_batch, y.micro_batch) << where;
      EXPECT_EQ(x.chunk, y.chunk) << where;
      EXPECT_EQ(x.phase, y.phase) << where;
      EXPECT_EQ(x.start, y.start) << where;
      EXPECT_EQ(x.finish, y.finish) << where;
    }
  }
}

void expect_same(const Timeline& a, const Timeline& b) {
  EXPECT_EQ(a.schedule, b.schedule);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.unit, b.unit);
  EXPECT_EQ(a.stages, b.stages);
  EXPECT_EQ(a.micro_batches, b.micro_batches);
  EXPECT_EQ(a.chunks, b.chunks);
  ASSERT_EQ(a.spans.size(), b.spans.size());
  for (size_t s = 0; s < a.spans.size(); ++s) {
    ASSERT_EQ(a.spans[s].size(), b.spans[s].size()) << "stage " << s;
    for (size_t i = 0; i < a.spans[s].size(); ++i) {
      EXPECT_EQ(a.spans[s][i].action, b.spans[s][i].action) << "stage " << s << " span " << i;
      EXPECT_EQ(a.spans[s][i].start, b.spans[s][i].start) << "stage " << s << " span " << i;
      EXPECT_EQ(a.spans[s][i].finish, b.spans[s][i].finish) << "stage " << s << " span " << i;
    }
  }
  expect_same_collectives(a, b);
}

TEST(TimelineJson, RoundTripsPlannedAndMeasuredTimelines) {
  for (const Case& c : kCases) {
    const Schedule s = make_schedule(c.kind, c.p, c.m, c.v);
    const Timeline t = planned_timeline(s, simulate_schedule(s, {0.7, 1.3, 0.4, 0}));
    expect_same(timeline_from_json(timeline_to_json(t)), t);
  }
  const Timeline m = measured_example();
  const std::string text = timeline_to_json(m);
  expect_same(timeline_from_json(text), m);
  // One span per line, so the file greps and diffs.
  EXPECT_NE(text.find("\n  {\"action\":\"RECV_B0\",\"start\":302.0,\"finish\":520.0}"), std::string::npos) << text;
  EXPECT_NE(text.find("\"format\":\"shardflow-timeline\",\"version\":1"), std::string::npos) << text;
}

TEST(TimelineJson, RoundTripsCollectivesOnePerLineAndWritesNoneWhenThereAreNone) {
  const Timeline t = with_collectives();
  const std::string text = timeline_to_json(t);
  const Timeline back = timeline_from_json(text);
  expect_same(back, t);
  ASSERT_EQ(back.collectives.size(), 2u);
  EXPECT_EQ(back.collectives[0][3].phase, 'B');
  EXPECT_NE(text.find("\n  {\"op\":\"AllGather\",\"group\":\"0-1\",\"micro_batch\":0,\"chunk\":0,\"phase\":\"B\","
                      "\"start\":600.0,\"finish\":610.5}"),
            std::string::npos)
      << text;
  // Without collectives (none, or an empty list per stage) the file is what it always was, and
  // reads back with none.
  const std::string plain = timeline_to_json(measured_example());
  EXPECT_EQ(plain.find("collectives"), std::string::npos);
  Timeline empty_lists = measured_example();
  empty_lists.collectives.resize(2);
  EXPECT_EQ(timeline_to_json(empty_lists), plain);
  EXPECT_TRUE(timeline_from_json(plain).collectives.empty());
  // A group is optional when reading.
  std::string no_group = text;
  const std::string group = "\"group\":\"0-1\",";
  for (size_t at = no_group.find(group); at != std::string::npos; at = no_group.find(group)) {
    no_group.erase(at, group.size());
  }
  const Timeline read = timeline_from_json(no_group);
  ASSERT_EQ(read.collectives[1].size(), 1u);
  EXPECT_EQ(read.collectives[1][0].group, "");
  EXPECT_EQ(read.collectives[1][0].op, "AllReduce");
}

TEST(TimelineJson, RoundTripsThroughAFile) {
  const std::string path = fmt::format("{}/timeline_test_{}/step.timeline.json", ::testing::TempDir(), ::getpid());
  const Timeline m = measured_example();
  write_timeline_file(path, m);
  expect_same(read_timeline_file(path), m);
}

std::string error_of(const std::string& text) {
  try {
    timeline_from_json(text, "step.json");
  } catch (const IoError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TimelineJson, RefusesBadFilesNamingTheProblem) {
  const std::string good = timeline_to_json(measured_example());
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  EXPECT_NE(error_of("{\"spans\": [").find("step.json: not JSON"), std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("step.json: a timeline is a JSON object"), std::string::npos);
  EXPECT_NE(error_of(with("\"unit\":\"us\",", "")).find("has no field 'unit'"), std::string::npos);
  EXPECT_NE(error_of(with("\"unit\":\"us\"", "\"unit\":\"parsecs\"")).find("'parsecs'"), std::string::npos);
  EXPECT_NE(error_of(with("\"stages\":2", "\"stages\":\"two\"")).find("field 'stages' is \"two\""), std::string::npos);
  EXPECT_NE(error_of(with("\"stages\":2", "\"stages\":3")).find("2 span lists for 3 stages"), std::string::npos);
  EXPECT_NE(error_of(with("\"action\":\"B0\"", "\"action\":\"Q0\"")).find("stage 0 span 5"), std::string::npos);
  EXPECT_NE(error_of(with("\"start\":520.0", "\"start\":999.0")).find("finishes at 720 before it starts at 999"),
            std::string::npos);
  EXPECT_NE(error_of(with("\"action\":\"F1\"", "\"action\":\"F2\"")).find("outside 2 micro-batches"),
            std::string::npos);
  EXPECT_NE(error_of(with("\"version\":1", "\"version\":7")).find("version 7"), std::string::npos);
  EXPECT_THROW(read_timeline_file("/nonexistent/step.timeline.json"), IoError);
}

std::string error_of_collectives(const std::string& lists) {
  std::string text = timeline_to_json(measured_example());
  text.insert(text.rfind('}'), ",\"collectives\": " + lists);
  return error_of(text);
}

TEST(TimelineJson, RefusesBadCollectivesNamingTheStageAndEntry) {
  const std::string ok =
      R"({"op":"AllReduce","group":"0-1","micro_batch":1,"chunk":0,"phase":"F","start":1,"finish":2})";
  EXPECT_EQ(error_of_collectives("[[" + ok + "], []]"), "(no error)");
  const auto bad = [&](const std::string& from, const std::string& to) {
    std::string entry = ok;
    const size_t at = entry.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return error_of_collectives("[[], [" + ok + ", " + entry.replace(at, from.size(), to) + "]]");
  };
  EXPECT_NE(error_of_collectives("{}").find("step.json: 'collectives' is object, not an array"), std::string::npos);
  EXPECT_NE(error_of_collectives("[[]]").find("step.json: 1 collective lists for 2 stages"), std::string::npos);
  EXPECT_NE(error_of_collectives("[[], 3]").find("collectives of stage 1 are not an array"), std::string::npos);
  EXPECT_NE(error_of_collectives("[[], [7]]").find("stage 1 collective 0 is not an object"), std::string::npos);
  EXPECT_NE(bad("\"phase\":\"F\"", "\"phase\":\"X\"").find("step.json: stage 1 collective 1 'AllReduce' has phase 'X'"),
            std::string::npos);
  EXPECT_NE(bad("\"phase\":\"F\"", "\"phase\":\"FB\"").find("has phase 'FB'"), std::string::npos);
  EXPECT_NE(bad("\"finish\":2", "\"finish\":0.5")
                .find("stage 1 collective 1 'AllReduce' finishes at 0.5 before it starts at 1"),
            std::string::npos);
  EXPECT_NE(bad("\"micro_batch\":1", "\"micro_batch\":2").find("is outside 2 micro-batches and 1 chunks"),
            std::string::npos);
  EXPECT_NE(bad("\"chunk\":0", "\"chunk\":-1").find("(micro-batch 1, chunk -1) is outside"), std::string::npos);
  EXPECT_NE(bad("\"op\":\"AllReduce\",", "").find("stage 1 collective 1 has no field 'op'"), std::string::npos);
  EXPECT_NE(bad("\"op\":\"AllReduce\"", "\"op\":\"\"").find("stage 1 collective 1 has an empty op"), std::string::npos);
  EXPECT_NE(bad("\"start\":1", "\"start\":\"soon\"").find("stage 1 collective 1 field 'start' is \"soon\""),
            std::string::npos);
}

TEST(TimelineJson, RefusesToWriteNonFiniteTimesOrUnknownUnits) {
  Timeline t = measured_example();
  t.spans[1][2].finish = std::numeric_limits<double>::infinity();
  EXPECT_THROW(timeline_to_json(t), InvalidArgument);
  t = measured_example();
  t.unit = "fortnights";
  EXPECT_THROW(timeline_to_json(t), InvalidArgument);
  t = with_collectives();
  t.collectives[1][0].finish = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(timeline_to_json(t), InvalidArgument);
  t = with_collectives();
  t.collectives[0][0].phase = 'Q';
  EXPECT_THROW(timeline_to_json(t), InvalidArgument);
  t = with_collectives();
  t.collectives.pop_back();  // a list for stage 0 only
  EXPECT_THROW(timeline_to_json(t), InvalidArgument);
}

TEST(ChromeTrace, OneXEventPerSpanAndOneProcessPerStage) {
  const Schedule s = make_schedule(ScheduleKind::kInterleaved1F1B, 4, 8, 2);
  const Timeline t = planned_timeline(s, simulate_schedule(s));
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace_json(t));
  int x = 0;
  std::vector<std::string> processes;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X") {
      ++x;
      EXPECT_EQ(e.at("tid"), 0);
      EXPECT_TRUE(e.at("args").contains("micro_batch"));
      EXPECT_TRUE(e.at("args").contains("chunk"));
    }
    if (e.at("ph") == "M" && e.at("name") == "process_name") {
      processes.push_back(e.at("args").at("name"));
      EXPECT_EQ(e.at("pid"), static_cast<int>(processes.size()) - 1);
    }
  }
  EXPECT_EQ(x, 4 * 8 * 2 * 2);
  EXPECT_EQ(processes, (std::vector<std::string>{"stage 0", "stage 1", "stage 2", "stage 3"}));
  // Simulator units become milliseconds, and the file says so.
  EXPECT_EQ(trace.at("otherData").at("us_per_unit"), 1000.0);
  EXPECT_NE(trace.at("otherData").at("time_scale").get<std::string>().find("1000 us"), std::string::npos);
  const auto& first = *std::find_if(trace.at("traceEvents").begin(), trace.at("traceEvents").end(),
                                    [](const auto& e) { return e.at("ph") == "X"; });
  EXPECT_EQ(first.at("name"), "F0");
  EXPECT_EQ(first.at("ts"), 0.0);
  EXPECT_EQ(first.at("dur"), 1000.0);
}

TEST(ChromeTrace, MeasuredMicrosecondsAreKeptAndTransfersGetTheirOwnThread) {
  const Timeline t = measured_example();
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace_json(t));
  int x = 0, transfers = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    ++x;
    if (e.at("tid") == 1) ++transfers;
    if (e.at("name") == "B1" && e.at("pid") == 1) {
      EXPECT_EQ(e.at("ts"), 620.0);
      EXPECT_EQ(e.at("dur"), 135.5);
      EXPECT_EQ(e.at("cat"), "B");
      EXPECT_EQ(e.at("args").at("micro_batch"), 1);
    }
  }
  EXPECT_EQ(x, 16);
  EXPECT_EQ(transfers, 8);
  EXPECT_EQ(trace.at("otherData").at("us_per_unit"), 1.0);
}

TEST(ChromeTrace, CollectivesGetAThirdThreadOnlyWhenThereAreAny) {
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace_json(with_collectives()));
  int x = 0, collectives = 0, threads = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name" && e.at("tid") == 2) {
      ++threads;
      EXPECT_EQ(e.at("args").at("name"), "collectives");
    }
    if (e.at("ph") != "X") continue;
    ++x;
    if (e.at("tid") != 2) continue;
    ++collectives;
    EXPECT_EQ(e.at("cat"), "collective");
    if (e.at("name") == "AllGather") {
      EXPECT_EQ(e.at("pid"), 0);
      EXPECT_EQ(e.at("ts"), 600.0);
      EXPECT_EQ(e.at("dur"), 10.5);
      EXPECT_EQ(e.at("args").at("phase"), "B");
      EXPECT_EQ(e.at("args").at("micro_batch"), 0);
      EXPECT_EQ(e.at("args").at("group"), "0-1");
    }
  }
  EXPECT_EQ(x, 16 + 5);
  EXPECT_EQ(collectives, 5);
  EXPECT_EQ(threads, 2);
  const std::string plain = chrome_trace_json(measured_example());
  EXPECT_EQ(plain.find("collective"), std::string::npos);
}

TEST(RenderSvg, OneBlockPerComputeActionWithKindClassAndTooltip) {
  for (const Case& c : kCases) {
    const Schedule s = make_schedule(c.kind, c.p, c.m, c.v);
    const Timeline t = planned_timeline(s, simulate_schedule(s));
    const std::string svg = render_svg(t);
    EXPECT_EQ(count(svg, "class=\"blk "), compute_actions(t)) << name_of(c);
    EXPECT_EQ(count(svg, "<rect class=\"blk "), compute_actions(t)) << name_of(c);
    EXPECT_EQ(count(svg, "class=\"blk F\""), c.p * c.m * c.v) << name_of(c);
    EXPECT_EQ(count(svg, "class=\"blk B\""), c.p * c.m * c.v) << name_of(c);
    EXPECT_EQ(count(svg, "class=\"blk W\""), c.kind == ScheduleKind::kZeroBubbleH1 ? c.p * c.m : 0) << name_of(c);
    EXPECT_EQ(count(svg, "<title>"), compute_actions(t)) << name_of(c);
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
    EXPECT_EQ(count(svg, "<svg"), 1);
    EXPECT_EQ(count(svg, "</svg>"), 1);
  }
}

TEST(RenderSvg, TitleStatesTheScheduleAndItsFigures) {
  const Schedule s = make_schedule(ScheduleKind::kOneFOneB, 4, 8);
  const std::string svg = render_svg(planned_timeline(s, simulate_schedule(s)));
  EXPECT_NE(svg.find("1f1b \xc2\xb7 p = 4 stages, m = 8 micro-batches, v = 1 chunk \xc2\xb7 planned"),
            std::string::npos);
  EXPECT_NE(svg.find("bubble fraction 0.273 (27.3% idle)"), std::string::npos);
  EXPECT_NE(svg.find("peak stashed activations per stage: 4, 3, 2, 1"), std::string::npos);
  EXPECT_NE(svg.find("<title>stage 0 B0: start 7, finish 8 units</title>"), std::string::npos);
  EXPECT_NE(svg.find("idle 27.3% \xc2\xb7 stash 4"), std::string::npos);
  EXPECT_NE(svg.find("time (simulator units)"), std::string::npos);
}

TEST(RenderSvg, SendsAndReceivesAreTicksNotBlocks) {
  const Timeline t = measured_example();
  const std::string svg = render_svg(t);
  EXPECT_EQ(count(svg, "class=\"blk "), 8);
  EXPECT_EQ(count(svg, "class=\"xfer "), 8);
  EXPECT_NE(svg.find("class=\"xfer RECV_B\""), std::string::npos);
  EXPECT_NE(svg.find("time (\xc2\xb5s)"), std::string::npos);
}

TEST(RenderSvg, ChunksGetLighterShadesAndDottedLabels) {
  EXPECT_EQ(action_colour(ActionKind::kForward, 0, 2), "#3b6fb6");
  EXPECT_NE(action_colour(ActionKind::kForward, 1, 2), action_colour(ActionKind::kForward, 0, 2));
  EXPECT_NE(action_colour(ActionKind::kForward), action_colour(ActionKind::kBackward));
  EXPECT_NE(action_colour(ActionKind::kBackward), action_colour(ActionKind::kWeight));
  const Schedule s = make_schedule(ScheduleKind::kInterleaved1F1B, 4, 8, 2);
  const std::string svg = render_svg(planned_timeline(s, simulate_schedule(s)));
  EXPECT_NE(svg.find(">3.1</text>"), std::string::npos);
  EXPECT_NE(svg.find(action_colour(ActionKind::kBackward, 1, 2)), std::string::npos);
}

TEST(RenderSvg, EscapesNames) {
  Timeline t = measured_example();
  t.schedule = "a<b&c";
  const std::string svg = render_svg(t);
  EXPECT_NE(svg.find("a&lt;b&amp;c"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
}

TEST(RenderSvg, CollectivesGetALaneUnderEachStageOnlyWhenThereAreAny) {
  const Timeline t = with_collectives();
  const std::string svg = render_svg(t);
  EXPECT_EQ(count(svg, "<rect class=\"coll "), collective_count(t));
  EXPECT_EQ(count(svg, "<rect class=\"coll AllReduce\""), 3);
  EXPECT_EQ(count(svg, "<rect class=\"coll-lane\""), 2);
  EXPECT_NE(svg.find(fmt::format("fill=\"{}\"><title>stage 0 AllGather on group 0-1 in B0 (micro-batch 0, chunk 0): "
                                 "start 600, finish 610.5 \xc2\xb5s, 10.5 \xc2\xb5s</title>",
                                 collective_colour("AllGather"))),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("class=\"coll-legend\""), std::string::npos);
  EXPECT_NE(svg.find("5 collectives, 3.2% of compute time"), std::string::npos);  // 36.5 / 1148.5
  EXPECT_NE(svg.find(">coll. 4.4% of busy</text>"), std::string::npos);           // stage 0: 26.5 / 600
  // Blocks and ticks are as they were; the picture is taller by the lanes and the legend.
  EXPECT_EQ(count(svg, "class=\"blk "), 8);
  EXPECT_EQ(count(svg, "class=\"xfer "), 8);
  EXPECT_NE(collective_colour("AllReduce"), collective_colour("AllGather"));
  EXPECT_NE(collective_colour("AllReduce"), action_colour(ActionKind::kForward));
  EXPECT_EQ(collective_colour("NeighborExchange"), collective_colour("SomethingElse"));
  // Without collectives, or with an empty list per stage, nothing changes and nothing is added.
  const std::string plain = render_svg(measured_example());
  EXPECT_EQ(plain.find("coll"), std::string::npos);
  Timeline empty_lists = measured_example();
  empty_lists.collectives.resize(2);
  EXPECT_EQ(render_svg(empty_lists), plain);
  // A collective reaching past the timeline's last span is drawn inside the lane.
  Timeline late = with_collectives();
  late.collectives[1].push_back({"AlltoAll", "0-1", 1, 0, 'B', 950, 2000});
  EXPECT_EQ(count(render_svg(late), "<rect class=\"coll AlltoAll\""), 1);
  EXPECT_EQ(collective_ops({late, measured_example()}),
            (std::vector<std::string>{"AllReduce", "AllGather", "ReduceScatter", "AlltoAll"}));
}

TEST(RenderHtml, LegendAndTableNameTheCollectivesWhenThereAreAny) {
  const Timeline measured = with_collectives();
  const std::string html = render_html({measured});
  EXPECT_EQ(count(html, "<rect class=\"coll "), collective_count(measured));
  EXPECT_NE(html.find("collective AllReduce (lane under a stage)"), std::string::npos);
  EXPECT_NE(html.find("collective ReduceScatter"), std::string::npos);
  EXPECT_NE(html.find("<th>collectives</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>4</td><td>30.5</td><td>4.4%</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("rect.coll:hover"), std::string::npos);
  const Schedule s = make_schedule(ScheduleKind::kOneFOneB, 4, 8);
  const std::string plain = render_html({planned_timeline(s, simulate_schedule(s)), measured_example()});
  for (const char* absent : {"collective", "coll-", "coll ", "rect.coll"}) {
    EXPECT_EQ(plain.find(absent), std::string::npos) << absent;
  }
}

TEST(RenderHtml, SelfContainedPageWithEveryTimelinesBlocksAndFigures) {
  const Schedule s = make_schedule(ScheduleKind::kOneFOneB, 4, 8);
  const Timeline planned = planned_timeline(s, simulate_schedule(s));
  const Timeline measured = measured_example();
  const std::string html = render_html({planned, measured});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<svg"), 2);
  EXPECT_EQ(count(html, "class=\"blk "), compute_actions(planned) + compute_actions(measured));
  EXPECT_EQ(count(html, "<table class=\"stats\">"), 2);
  EXPECT_NE(html.find("<td>0.273</td><td>max 4</td>"), std::string::npos);
  // Nothing to fetch: no scripts, links, images, imports or URLs.
  for (const char* banned : {"http:", "https:", "<script", "<link", "<img", "src=", "href=", "@import", "url("}) {
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  }
  // The planned section comes first, as given.
  EXPECT_LT(html.find("Planned:"), html.find("Measured:"));
}

}  // namespace timeline_test
}  // namespace
}  // namespace sf::pipeline
