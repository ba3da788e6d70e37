// A rank's pipeline program, built without running it: the phases (a split backward puts the
// weight gradients in W and leaves B nothing on the first stage), registers for the values a
// later phase reads, the collective order every group gets from the schedule, and the transfers
// a stage boundary with different layouts on its two sides plans (pieces go straight to the
// ranks that need them, bytes as the plan says).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/core/error.h>
#include <shardflow/ops/builder.h>
#include <shardflow/ops/collective_attrs.h>
#include <shardflow/ops/op_def.h>
#include <shardflow/ops/plan.h>
#include <shardflow/pipeline/stage_program.h>
#include <shardflow/pipeline/transfers.h>

namespace sf::pipeline {
namespace {

// x -> relu(x W0) [stage 0] -> relu(a W1) [stage 1] -> (h W2) [stage 2] -> loss, 8 rows.
struct Net {
  Graph g;
  int loss = -1;
  std::vector<int> stage;
  Net() {
    GraphBuilder b(g);
    Value x = b.input("data", {8, 6});
    Value y = b.input("label", {8}, DType::kI32);
    auto w = [&](const char* name, int64_t in, int64_t out) { return b.parameter(name, {in, out}); };
    const int s0 = g.size();
    Value a = b.relu(b.matmul(x, w("w0", 6, 8)));
    const int s1 = g.size();
    Value h = b.relu(b.matmul(a, w("w1", 8, 8)));
    const int s2 = g.size();
    loss = b.softmax_cross_entropy(b.matmul(h, w("w2", 8, 4)), y).id;
    stage.assign(g.size(), -1);
    for (int i = s0; i < s1; ++i) stage[i] = 0;
    for (int i = s1; i < s2; ++i) stage[i] = 1;
    for (int i = s2; i < g.size(); ++i) stage[i] = 2;
  }
};

Schedule lowered(ScheduleKind kind, int micro = 4) { return with_transfers(make_schedule(kind, 3, micro)); }

TEST(StageProgram, ASplitBackwardPutsWeightGradientsInWAndKeepsWhatWReads) {
  Net n;
  const auto stages = split_stages(n.g, n.loss, n.stage, 3);
  for (int rank = 0; rank < 3; ++rank) {
    const StageProgram prog = build_stage_program(stages, lowered(ScheduleKind::kZeroBubbleH1), {}, rank,
                                                  {.per_stage = 1, .split_backward = true});
    const StreamSpec& s = prog.stream;
    std::vector<int> count(kPhaseKinds, 0);
    for (int id = 0; id < prog.graph.size(); ++id) {
      if (s.phase_of[id] < 0) continue;
      ++count[s.phase_of[id]];
      // A value read by a later phase keeps more than one micro-batch's register.
      for (int in : prog.graph.node(id).inputs)
        if (s.phase_of[in] >= 0 && s.phase_of[in] != s.phase_of[id]) {
          EXPECT_GT(s.registers[in], 1) << prog.graph.node(in).name;
        }
    }
    EXPECT_GT(count[kPhaseForward], 0) << "rank " << rank;
    EXPECT_GT(count[kPhaseWeight], 0) << "rank " << rank;
    // The first stage computes no input gradient: B has nothing to do there.
    EXPECT_EQ(count[kPhaseBackward] == 0, rank == 0) << "rank " << rank;
    for (int id : prog.chunks[0].param_grads) EXPECT_EQ(s.phase_of[id], kPhaseWeight);
  }
}

TEST(StageProgram, EveryCollectiveIsOrderedOncePerMicroBatchInTheListsOrder) {
  Net n;
  const auto stages = split_stages(n.g, n.loss, n.stage, 3);
  // Two devices per stage (data parallel inside each): the mirror reductions and the transfers.
  const Schedule schedule = lowered(ScheduleKind::kOneFOneB);
  for (int rank = 0; rank < 6; ++rank) {
    const StageProgram prog = build_stage_program(stages, schedule, {}, rank, {.per_stage = 2});
    std::map<std::string, int> collectives;
    for (int id : needed_nodes(prog.graph, prog.fetches))  // the ones the runtime spawns
      if (is_collective(prog.graph.node(id))) ++collectives[group_of(prog.graph.node(id)).name];
    for (const auto& [group, order] : prog.stream.collective_order) {
      EXPECT_EQ(static_cast<int>(order.size()), collectives[group] * schedule.micro_batches) << group;
      std::map<int, int64_t> last;  // each node's micro-batches come in order
      for (const auto& [micro, id] : order) {
        auto it = last.find(id);
        if (it != last.end()) {
          EXPECT_EQ(micro, it->second + 1) << group;
        }
        last[id] = micro;
      }
    }
  }
}

// A boundary value split by columns on stage 0 (2 devices) and by rows on stage 1: each rank of
// stage 1 receives one piece from each rank of stage 0 (a quarter of the value each), and the
// bytes add up to the value on both sides.
TEST(StageProgram, ABoundaryWithOtherLayoutsOnItsSidesRunsThePlannedRedistribution) {
  Graph g;
  GraphBuilder b(g);
  Value x = b.input("data", {8, 6});
  Value y = b.input("label", {8}, DType::kI32);
  Value a = b.matmul(x, b.parameter("w0", {6, 4}));  // stage 0: split the output columns
  const int boundary = g.size();
  Value h = b.relu(a);  // stage 1: split rows (data parallel)
  const int loss = b.softmax_cross_entropy(h, y).id;
  std::vector<int> stage(g.size(), -1);
  for (int i = 0; i < boundary; ++i) stage[i] = 0;
  for (int i = boundary; i < g.size(); ++i) stage[i] = 1;
  const auto stages = split_stages(g, loss, stage, 2);
  StrategyTable table;
  table[g.node(a.id).name] = OpStrategy{{{1, 1}, {1, 2}}};
  const Schedule schedule = with_transfers(make_schedule(ScheduleKind::kOneFOneB, 2, 2));
  int64_t sent = 0, received = 0;
  for (int rank = 0; rank < 4; ++rank) {
    const StageProgram prog = build_stage_program(stages, schedule, table, rank, {.per_stage = 2});
    int sends = 0, receives = 0;
    for (const auto& [id, what] : prog.transfers) {
      if (what.first == ActionKind::kSendActivation) ++sends;
      if (what.first == ActionKind::kRecvActivation) ++receives;
    }
    // Each rank of stage 0 sends a piece to each rank of stage 1, which receives one from each.
    EXPECT_EQ(rank < 2 ? sends : receives, 2) << "rank " << rank;
    sent += prog.sent_bytes;
    received += prog.received_bytes;
  }
  // Activations: 8x4 floats once each way across the boundary (forward), and their gradient back.
  EXPECT_EQ(sent, 2 * 8 * 4 * 4);
  EXPECT_EQ(received, 2 * 8 * 4 * 4);
}

}  // namespace
}  // namespace sf::pipeline
