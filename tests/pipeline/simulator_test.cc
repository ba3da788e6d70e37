// Tests for the schedule simulator (pipeline/simulator.h): with unit durations every schedule's
// bubble fraction and peak stash meet the theory, incomplete schedules are refused naming the
// stage and action, and a schedule that can never finish is reported naming a stuck stage and
// the action it can never run.
#include <shardflow/pipeline/simulator.h>

#include <gtest/gtest.h>

#include <string>

namespace sf::pipeline {
namespace {

struct Size {
  int p, m;
};

std::string message_of(const Schedule& s) {
  try {
    simulate_schedule(s);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Simulator, GPipeAnd1F1BBubbleIsPMinusOneOverMPlusPMinusOne) {
  for (Size z : {Size{2, 4}, Size{4, 8}, Size{4, 4}, Size{3, 7}, Size{8, 32}}) {
    const double theory = double(z.p - 1) / (z.m + z.p - 1);
    for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB}) {
      const SimulationResult r = simulate_schedule(make_schedule(kind, z.p, z.m));
      EXPECT_DOUBLE_EQ(r.makespan, 2.0 * (z.m + z.p - 1)) << schedule_name(kind) << " p" << z.p << " m" << z.m;
      EXPECT_NEAR(r.bubble_fraction, theory, 1e-12) << schedule_name(kind) << " p" << z.p << " m" << z.m;
      for (const StageTimeline& stage : r.stages) EXPECT_NEAR(stage.bubble_fraction, theory, 1e-12);
    }
  }
}

TEST(Simulator, BackwardTwiceForwardKeepsTheSameBubbleFraction) {
  const SimulationResult r = simulate_schedule(make_schedule(ScheduleKind::kOneFOneB, 4, 8), {1, 2, 1});
  EXPECT_DOUBLE_EQ(r.makespan, 3.0 * (8 + 4 - 1));
  EXPECT_NEAR(r.bubble_fraction, 3.0 / 11, 1e-12);
}

TEST(Simulator, PeakStashIsMForGPipeAndAtMostPFor1F1B) {
  const int p = 4, m = 8;
  const SimulationResult gpipe = simulate_schedule(make_schedule(ScheduleKind::kGPipe, p, m));
  const SimulationResult ofob = simulate_schedule(make_schedule(ScheduleKind::kOneFOneB, p, m));
  for (int s = 0; s < p; ++s) {
    EXPECT_EQ(gpipe.stages[s].peak_stashed, m) << "stage " << s;
    EXPECT_EQ(ofob.stages[s].peak_stashed, p - s) << "stage " << s;
  }
}

TEST(Simulator, InterleavedBubbleIsPMinusOneOverVMPlusPMinusOne) {
  for (Size z : {Size{4, 8}, Size{2, 4}, Size{4, 16}}) {
    for (int v : {2, 3}) {
      const SimulationResult r = simulate_schedule(make_schedule(ScheduleKind::kInterleaved1F1B, z.p, z.m, v));
      EXPECT_NEAR(r.bubble_fraction, double(z.p - 1) / (v * z.m + z.p - 1), 1e-12)
          << "p" << z.p << " m" << z.m << " v" << v;
    }
  }
}

TEST(Simulator, ZeroBubbleH1BubbleIsAboutPMinusOneOverThreeM) {
  for (Size z : {Size{2, 4}, Size{4, 8}, Size{4, 32}}) {
    const SimulationResult r = simulate_schedule(make_schedule(ScheduleKind::kZeroBubbleH1, z.p, z.m));
    // Exactly (p-1)(F+B-W) idle per stage: (p-1)/(3m+p-1), which is ≈ (p-1)/(3m).
    EXPECT_DOUBLE_EQ(r.makespan, 3.0 * z.m + z.p - 1) << "p" << z.p << " m" << z.m;
    EXPECT_NEAR(r.bubble_fraction, double(z.p - 1) / (3 * z.m), double(z.p - 1) / (3 * z.m) * 0.3);
    // Stashed until W: stage s holds back s weight passes on top of 1F1B's p - s.
    for (int s = 0; s < z.p; ++s) EXPECT_LE(r.stages[s].peak_stashed, z.p) << "stage " << s;
  }
}

TEST(Simulator, TransfersPairedWithComputeKeepTheTiming) {
  const Schedule plain = parse_schedule("F0 F1 B0 B1\nF0 B0 F1 B1\n", 2);
  const Schedule sent = parse_schedule(
      "F0 SEND_F0 F1 SEND_F1 RECV_B0 B0 RECV_B1 B1\n"
      "RECV_F0 F0 B0 SEND_B0 RECV_F1 F1 B1 SEND_B1\n",
      2);
  EXPECT_DOUBLE_EQ(simulate_schedule(sent).makespan, simulate_schedule(plain).makespan);
}

TEST(Simulator, RefusesIncompleteSchedulesNamingStageAndAction) {
  EXPECT_EQ(message_of(parse_schedule("F0 F1 B0 B1\nF0 B0 F1\n", 2)),
            "pipeline schedule '(parsed)': stage 1 has 'B1' 0 time(s), expected 1");
  EXPECT_EQ(message_of(parse_schedule("F0 F0 B0\nF0 B0\n", 1)),
            "pipeline schedule '(parsed)': stage 0 has 'F0' 2 time(s), expected 1");
  EXPECT_EQ(message_of(parse_schedule("F0 B0\nF0 B0 F2 B2\n", 2)),
            "pipeline schedule '(parsed)': stage 1 has 'F2', outside 2 micro-batches and 1 chunks");
  EXPECT_EQ(message_of(parse_schedule("F0 B0 W0\nF0 B0\n", 1)),
            "pipeline schedule '(parsed)': stage 1 has 'W0' 0 time(s), expected 1");
  EXPECT_EQ(message_of(parse_schedule("F0 SEND_F0 B0\nF0 B0\n", 1)),
            "pipeline schedule '(parsed)': stage 1 has 'RECV_F0' 0 time(s), expected 1");
}

TEST(Simulator, FindsTheDeadlockNamingStageAndAction) {
  // Stage 0 waits for B0 before sending F1; stage 1 wants F1 before it runs B0.
  const Schedule broken = parse_schedule("F0 B0 F1 B1\nF0 F1 B0 B1\n", 2);
  try {
    simulate_schedule(broken);
    FAIL() << "no deadlock found";
  } catch (const ScheduleDeadlock& e) {
    EXPECT_EQ(e.stage(), 0);
    EXPECT_EQ(to_string(e.action()), "B0");
    EXPECT_STREQ(e.what(),
                 "pipeline schedule '(parsed)' deadlocks: stage 0 can never run action 1 'B0' (it waits for 'B0' on "
                 "stage 1); stage 1 can never run action 1 'F1' (it waits for 'F1' on stage 0)");
  }
  // A generated schedule with one stage's order broken: the last stage of 1F1B runs B3 before F3.
  Schedule bad = make_schedule(ScheduleKind::kOneFOneB, 4, 8);
  std::swap(bad.actions[3][6], bad.actions[3][7]);
  try {
    simulate_schedule(bad);
    FAIL() << "no deadlock found";
  } catch (const ScheduleDeadlock& e) {
    EXPECT_EQ(e.stage(), 0);
    EXPECT_NE(std::string(e.what()).find("stage 3 can never run action 6 'B3' (it waits for 'F3' on stage 3)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Simulator, EveryGoldenScheduleRunsToTheEnd) {
  for (auto [kind, v] : {std::pair{ScheduleKind::kGPipe, 1},
                         {ScheduleKind::kOneFOneB, 1},
                         {ScheduleKind::kInterleaved1F1B, 2},
                         {ScheduleKind::kZeroBubbleH1, 1}}) {
    const SimulationResult r = simulate_schedule(make_schedule(kind, 4, 8, v));
    for (const StageTimeline& stage : r.stages)
      EXPECT_EQ(stage.start.size(), size_t(8 * v * (kind == ScheduleKind::kZeroBubbleH1 ? 3 : 2)));
  }
}

}  // namespace
}  // namespace sf::pipeline
