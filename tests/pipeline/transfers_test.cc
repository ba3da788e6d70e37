// Lowering compute-only schedules into lists with sends and receives: every schedule still
// simulates without a deadlock and to the same bubble when transfers cost nothing, each F past
// the first virtual stage is right after its RECV_F, each B before the last right after its
// RECV_B, and a list that already has transfers is refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/pipeline/simulator.h>
#include <shardflow/pipeline/transfers.h>

namespace sf::pipeline {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace transfers_test {

struct Case {
  ScheduleKind kind;
  int p, m, v;
};

class Transfers : public testing::TestWithParam<Case> {};

TEST_P(Transfers, EachComputeActionGetsItsTransfersAndTheScheduleStillRuns) {
  const Case c = GetParam();
  const Schedule compute = make_schedule(c.kind, c.p, c.m, c.v);
  const Schedule lowered = with_transfers(compute);
  const int last = c.p * c.v - 1;
  for (int s = 0; s < c.p; ++s) {
    const auto& list = lowered.actions[s];
    int compute_actions = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      const Action& a = list[i];
      const int k = a.chunk * c.p + s;
      if (!is_compute(a.kind)) continue;
      ++compute_actions;
      if (a.kind == ActionKind::kForward && k > 0) {
        ASSERT_GT(i, 0u);
        EXPECT_EQ(list[i - 1], (Action{ActionKind::kRecvActivation, a.micro_batch, a.chunk})) << to_string(a);
      }
      if (a.kind == ActionKind::kForward && k < last) {
        EXPECT_EQ(list[i + 1], (Action{ActionKind::kSendActivation, a.micro_batch, a.chunk})) << to_string(a);
      }
      if (a.kind == ActionKind::kBackward && k < last) {
        EXPECT_EQ(list[i - 1], (Action{ActionKind::kRecvGradient, a.micro_batch, a.chunk})) << to_string(a);
      }
      if (a.kind == ActionKind::kBackward && k > 0) {
        EXPECT_EQ(list[i + 1], (Action{ActionKind::kSendGradient, a.micro_batch, a.chunk})) << to_string(a);
      }
    }
    EXPECT_EQ(compute_actions, static_cast<int>(compute.actions[s].size()));
  }
  const SimulationResult with = simulate_schedule(lowered);
  const SimulationResult without = simulate_schedule(compute);
  EXPECT_DOUBLE_EQ(with.makespan, without.makespan);
  EXPECT_DOUBLE_EQ(with.bubble_fraction, without.bubble_fraction);
}

INSTANTIATE_TEST_SUITE_P(Schedules, Transfers,
                         testing::Values(Case{ScheduleKind::kGPipe, 2, 4, 1}, Case{ScheduleKind::kOneFOneB, 4, 8, 1},
                                         Case{ScheduleKind::kZeroBubbleH1, 4, 8, 1},
                                         Case{ScheduleKind::kInterleaved1F1B, 4, 8, 2},
                                         Case{ScheduleKind::kInterleaved1F1B, 2, 4, 3}));

TEST(Transfers, AListThatAlreadyHasTransfersIsRefused) {
  const Schedule lowered = with_transfers(make_schedule(ScheduleKind::kOneFOneB, 2, 2));
  EXPECT_THAT([&] { with_transfers(lowered); },
              testing::ThrowsMessage<InvalidArgument>(testing::HasSubstr("already has the transfer SEND_F0")));
}

}  // namespace transfers_test
}  // namespace
}  // namespace sf::pipeline
