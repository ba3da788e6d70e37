// assemble_whole_state, note_state_blocks, holds_blocks and cut_to_held_blocks
// (train/state_assembly.h): after a membership change the new rank 0 puts the agreed step's state
// together whole from the blocks its members hold (real zmq sockets, one thread per rank), equal
// element for element to the tensor the blocks were cut from, with rank 0's scalars less the
// "blocks" entry; the other members return nothing. A block no member holds is refused in one
// line on every member, naming the tensor and the block; a rank that joined takes no part; a
// member lost before it says what it holds counts as holding nothing. note_state_blocks records
// where a sharded parameter's block (and its optimizer state's) lies and nothing for a whole one,
// and which parameters a pipeline rank's other stages hold; stages are put together the same way,
// and a stage no member holds is refused on every member; cut_to_held_blocks cuts a whole state
// back to the blocks a model holds (a round trip).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <shardflow/comm/zmq/transport.h>
#include <shardflow/core/error.h>
#include <shardflow/train/layers.h>
#include <shardflow/train/losses.h>
#include <shardflow/train/model.h>
#include <shardflow/train/optimizer.h>
#include <shardflow/train/parameter.h>
#include <shardflow/train/state_assembly.h>

namespace sf {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace state_assembly_test {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr int64_t kAssemblyStep = 7;
constexpr std::chrono::milliseconds kAssemblyTimeout = 10s;

// The whole 4x6 "w": w[i][j] = i * 10 + j.
Tensor assembly_whole_w() {
  std::vector<float> v;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) v.push_back(static_cast<float>(i * 10 + j));
  return Tensor::from_vector({4, 6}, v);
}

// Columns [col, col + 3) of assembly_whole_w(), cut by hand.
Tensor assembly_w_block(int64_t col) {
  std::vector<float> v;
  for (int i = 0; i < 4; ++i)
    for (int64_t j = col; j < col + 3; ++j) v.push_back(static_cast<float>(i * 10 + j));
  return Tensor::from_vector({4, 3}, v);
}

Tensor assembly_b() { return Tensor::from_vector({6}, std::vector<float>{0.5f, -1, 2, -3, 4.25f, 5}); }

// Rank `rank`'s state: "w" as the block at column `col` (whole when col < 0), "b" whole, the i32
// "global_step", and scalars of its own ("rank") and of the job.
TrainingState assembly_state(int rank, int64_t col) {
  TrainingState s;
  s.tensors.emplace_back("w", col < 0 ? assembly_whole_w() : assembly_w_block(col));
  s.tensors.emplace_back("b", assembly_b());
  s.tensors.emplace_back("global_step", Tensor::from_vector({}, std::vector<int32_t>{kAssemblyStep}));
  s.scalars = {{"global_step", kAssemblyStep}, {"epoch", 2}, {"step_in_epoch", 3}, {"rank", rank}};
  if (col >= 0)
    s.scalars["blocks"]["w"] = {{"global", {4, 6}}, {"offset", {0, col}}, {"shape", {4, 3}}};
  return s;
}

const Tensor* assembly_find(const TrainingState& s, const std::string& name) {
  for (const auto& [n, t] : s.tensors)
    if (n == name) return &t;
  return nullptr;
}

// Every element of `got` equals `want`'s (f32), shapes equal.
void assembly_expect_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  for (int64_t k = 0; k < want.numel(); ++k) {
    EXPECT_EQ(got.f32()[k], want.f32()[k]) << what << " at element " << k;
  }
}

// What one rank's call ended with.
struct AssemblyOutcome {
  std::optional<TrainingState> state;
  bool threw = false;
  std::string thrown;  // "Error" (sf::Error), "PeerLost", or "other"
  std::string error;   // what() of the exception thrown
};

// Ranks 0 .. states.size()-1 of `world` call assemble_whole_state with `members`, each on its own
// thread, holding states[r]; `before` (when set) runs first on each rank's thread.
std::vector<AssemblyOutcome> assembly_run(const std::vector<std::shared_ptr<comm::Transport>>& world, int members,
                                          const std::vector<TrainingState>& states,
                                          const std::function<void(int)>& before = {}) {
  std::vector<AssemblyOutcome> out(states.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < states.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        if (before) before(static_cast<int>(r));
        out[r].state = assemble_whole_state(*world[r], members, states[r], kAssemblyStep, kAssemblyTimeout);
      } catch (const PeerLost& e) {
        out[r] = {std::nullopt, true, "PeerLost", e.what()};
      } catch (const Error& e) {
        out[r] = {std::nullopt, true, "Error", e.what()};
      } catch (const std::exception& e) {
        out[r] = {std::nullopt, true, "other", e.what()};
      }
    });
  for (auto& t : threads) t.join();
  return out;
}

// Rank 0's assembled state: "w" the whole tensor, "b" and "global_step" rank 0's, the scalars rank
// 0's without "blocks".
void assembly_expect_whole(const AssemblyOutcome& rank0, const TrainingState& own0) {
  ASSERT_FALSE(rank0.threw) << rank0.error;
  ASSERT_TRUE(rank0.state.has_value());
  const TrainingState& whole = *rank0.state;
  EXPECT_FALSE(holds_blocks(whole));
  nlohmann::json scalars = own0.scalars;
  scalars.erase("blocks");
  EXPECT_EQ(whole.scalars, scalars);
  ASSERT_EQ(whole.tensors.size(), 3u);
  const Tensor* w = assembly_find(whole, "w");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->shape(), (Shape{4, 6}));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      EXPECT_EQ(w->f32()[i * 6 + j], static_cast<float>(i * 10 + j)) << "w[" << i << "][" << j << "]";
    }
  const Tensor* b = assembly_find(whole, "b");
  ASSERT_NE(b, nullptr);
  assembly_expect_equal(*b, *assembly_find(own0, "b"), "b");
  const Tensor* step = assembly_find(whole, "global_step");
  ASSERT_NE(step, nullptr);
  ASSERT_EQ(step->dtype(), DType::kI32);
  ASSERT_EQ(step->numel(), 1);
  EXPECT_EQ(step->i32()[0], kAssemblyStep);
}

TEST(StateAssembly, RankZeroPutsTheBlocksOfThreeMembersTogether) {
  auto world = comm::make_zmq_world(3);
  // Ranks 0 and 2 hold columns [0:3) of "w", rank 1 columns [3:6).
  const std::vector<TrainingState> states = {assembly_state(0, 0), assembly_state(1, 3), assembly_state(2, 0)};
  ASSERT_TRUE(holds_blocks(states[0]));
  const std::vector<AssemblyOutcome> got = assembly_run(world, 3, states);
  assembly_expect_whole(got[0], states[0]);
  for (size_t r = 1; r < got.size(); ++r) {
    EXPECT_FALSE(got[r].threw) << "rank " << r << ": " << got[r].error;
    EXPECT_FALSE(got[r].state.has_value()) << "rank " << r;
  }
}

TEST(StateAssembly, ATensorOnlyAnotherMemberHoldsWholeIsFetchedFromTheLowest) {
  auto world = comm::make_zmq_world(3);
  // "extra" is whole on ranks 1 and 2 (with other values on rank 2), unknown to rank 0.
  std::vector<TrainingState> states = {assembly_state(0, 0), assembly_state(1, 3), assembly_state(2, 0)};
  states[1].tensors.emplace_back("extra", Tensor::from_vector({2}, std::vector<float>{11, 12}));
  states[2].tensors.emplace_back("extra", Tensor::from_vector({2}, std::vector<float>{21, 22}));
  const std::vector<AssemblyOutcome> got = assembly_run(world, 3, states);
  ASSERT_FALSE(got[0].threw) << got[0].error;
  ASSERT_TRUE(got[0].state.has_value());
  const Tensor* extra = assembly_find(*got[0].state, "extra");
  ASSERT_NE(extra, nullptr);
  assembly_expect_equal(*extra, Tensor::from_vector({2}, std::vector<float>{11, 12}), "extra");
  EXPECT_EQ(got[0].state->tensors.size(), 4u);
  for (size_t r = 1; r < got.size(); ++r) {
    EXPECT_FALSE(got[r].threw) << "rank " << r << ": " << got[r].error;
  }
}

TEST(StateAssembly, ABlockNoMemberHoldsIsRefusedOnEveryMember) {
  auto world = comm::make_zmq_world(2);
  // Both hold columns [0:3) only: nobody holds [3:6).
  const std::vector<TrainingState> states = {assembly_state(0, 0), assembly_state(1, 0)};
  const std::vector<AssemblyOutcome> got = assembly_run(world, 2, states);
  for (size_t r = 0; r < got.size(); ++r) {
    EXPECT_TRUE(got[r].threw) << "rank " << r << " did not throw";
    EXPECT_EQ(got[r].thrown, "Error") << "rank " << r << ": " << got[r].error;
    EXPECT_FALSE(got[r].state.has_value()) << "rank " << r;
    EXPECT_THAT(got[r].error, HasSubstr("no member holds the block [0:4, 3:6] of 'w'")) << "rank " << r;
    EXPECT_EQ(got[r].error.find('\n'), std::string::npos) << "rank " << r << ": " << got[r].error;
  }
}

TEST(StateAssembly, ARankThatJoinedTakesNoPart) {
  auto world = comm::make_zmq_world(3);
  // Rank 2 joined: it holds nothing and does not call; members 0 and 1 hold the two blocks.
  const std::vector<TrainingState> states = {assembly_state(0, 0), assembly_state(1, 3)};
  const auto start = std::chrono::steady_clock::now();
  const std::vector<AssemblyOutcome> got = assembly_run(world, 2, states);
  const auto took = std::chrono::steady_clock::now() - start;
  assembly_expect_whole(got[0], states[0]);
  EXPECT_FALSE(got[1].threw) << got[1].error;
  EXPECT_FALSE(got[1].state.has_value());
  // Waiting on rank 2 would have taken the whole receive timeout.
  EXPECT_LT(took, kAssemblyTimeout / 2);
}

TEST(StateAssembly, AMemberLostBeforeItSaysWhatItHoldsHoldsNothing) {
  auto world = comm::make_zmq_world(3);
  // Rank 0 holds every tensor whole; rank 1 a block; rank 2 is lost before it sends.
  const std::vector<TrainingState> states = {assembly_state(0, -1), assembly_state(1, 3)};
  world[2]->close();
  const auto start = std::chrono::steady_clock::now();
  const std::vector<AssemblyOutcome> got = assembly_run(world, 3, states);
  const auto took = std::chrono::steady_clock::now() - start;
  assembly_expect_whole(got[0], states[0]);
  EXPECT_FALSE(got[1].threw) << got[1].error;
  EXPECT_FALSE(got[1].state.has_value());
  EXPECT_LT(took, kAssemblyTimeout / 2);  // a closed peer fails the receive at once
}

TEST(StateAssembly, AMemberLostWhoseBlocksHaveReplicasIsNotMissed) {
  auto world = comm::make_zmq_world(3);
  // Ranks 0 and 1 hold the two blocks of "w"; rank 2 (lost) held a replica of rank 0's.
  const std::vector<TrainingState> states = {assembly_state(0, 0), assembly_state(1, 3)};
  world[2]->close();
  const std::vector<AssemblyOutcome> got = assembly_run(world, 3, states);
  assembly_expect_whole(got[0], states[0]);
  EXPECT_FALSE(got[1].threw) << got[1].error;
}

TEST(StateAssembly, NoteStateBlocksListsNothingForWholeParameters) {
  Parameter w({4, 6}, "zeros");
  w.finalize("w", 1);
  const ParameterList params{w};
  TrainingState s;
  s.tensors.emplace_back("w", w.value());
  s.tensors.emplace_back("moments.w", Tensor::zeros({4, 6}));
  s.tensors.emplace_back("global_step", Tensor::from_vector({}, std::vector<int32_t>{3}));
  s.scalars = {{"global_step", 3}, {"blocks", {{"w", {{"global", {4, 6}}, {"offset", {0, 3}}, {"shape", {4, 3}}}}}}};
  ASSERT_TRUE(holds_blocks(s));  // a stale entry, which the data-parallel note removes
  note_state_blocks(s, params);
  EXPECT_FALSE(holds_blocks(s));
  EXPECT_FALSE(s.scalars.contains("blocks")) << s.scalars.dump();
  EXPECT_EQ(s.scalars["global_step"], 3);
}

TEST(StateAssembly, NoteStateBlocksRecordsAShardedParametersBlock) {
  Parameter w({4, 6}, "zeros");
  w.finalize("w", 1);
  w.shard({0, 3}, {4, 3});
  Parameter b({6}, "ones");
  b.finalize("b", 1);
  const ParameterList params{w, b};
  TrainingState s;
  s.tensors.emplace_back("w", w.value());
  s.tensors.emplace_back("moments.w", Tensor::zeros({4, 3}));
  s.tensors.emplace_back("b", b.value());
  s.tensors.emplace_back("global_step", Tensor::from_vector({}, std::vector<int32_t>{3}));
  note_state_blocks(s, params);
  ASSERT_TRUE(holds_blocks(s));
  const nlohmann::json want = {{"global", {4, 6}}, {"offset", {0, 3}}, {"shape", {4, 3}}};
  const nlohmann::json& blocks = s.scalars["blocks"];
  EXPECT_EQ(blocks.size(), 2u) << blocks.dump();
  EXPECT_EQ(blocks.value("w", nlohmann::json()), want) << blocks.dump();
  EXPECT_EQ(blocks.value("moments.w", nlohmann::json()), want) << blocks.dump();
  EXPECT_FALSE(blocks.contains("b"));
  EXPECT_FALSE(blocks.contains("global_step"));
}

// A pipeline rank's state: the tensors of its own stage; "held_elsewhere" names the network's other
// parameters.
TEST(StateAssembly, NoteStateBlocksListsTheParametersOtherStagesHold) {
  Parameter w({4, 6}, "zeros"), b({6}, "ones");
  w.finalize("w", 1);
  b.finalize("b", 1);
  TrainingState s;
  s.tensors.emplace_back("b", b.value());
  s.tensors.emplace_back("moments.b", Tensor::zeros({6}));
  note_state_blocks(s, ParameterList{w, b});
  EXPECT_FALSE(holds_blocks(s));
  EXPECT_FALSE(holds_whole_state(s));
  EXPECT_EQ(s.scalars.value("held_elsewhere", nlohmann::json()), nlohmann::json({"w"})) << s.scalars.dump();
  // Holding both, it is whole again.
  s.tensors.emplace_back("w", w.value());
  note_state_blocks(s, ParameterList{w, b});
  EXPECT_TRUE(holds_whole_state(s)) << s.scalars.dump();
}

// Stage 0 ("w") on ranks 0 and 2, stage 1 ("b") on rank 1 (or on none), as note_state_blocks
// describes a pipeline rank's state.
TrainingState assembly_stage_state(int rank, bool first_stage) {
  TrainingState s;
  if (first_stage) {
    s.tensors.emplace_back("w", assembly_whole_w());
    s.tensors.emplace_back("moments.w", Tensor::full({4, 6}, static_cast<float>(rank)));
  } else {
    s.tensors.emplace_back("b", assembly_b());
    s.tensors.emplace_back("moments.b", Tensor::full({6}, 0.25f));
  }
  s.tensors.emplace_back("global_step", Tensor::from_vector({}, std::vector<int32_t>{kAssemblyStep}));
  s.scalars = {{"global_step", kAssemblyStep}, {"held_elsewhere", {first_stage ? "b" : "w"}}};
  return s;
}

TEST(StateAssembly, TheStagesOfTheMembersMakeTheWholeState) {
  auto world = comm::make_zmq_world(3);
  const std::vector<TrainingState> states = {assembly_stage_state(0, true), assembly_stage_state(1, false),
                                             assembly_stage_state(2, true)};
  const std::vector<AssemblyOutcome> got = assembly_run(world, 3, states);
  ASSERT_FALSE(got[0].threw) << got[0].error;
  ASSERT_TRUE(got[0].state.has_value());
  const TrainingState& whole = *got[0].state;
  EXPECT_TRUE(holds_whole_state(whole)) << whole.scalars.dump();
  EXPECT_EQ(whole.tensors.size(), 5u);
  for (const auto& [name, t] : states[1].tensors) {
    const Tensor* u = assembly_find(whole, name);
    ASSERT_NE(u, nullptr) << name;
    if (t.dtype() == DType::kF32) assembly_expect_equal(*u, t, name);
  }
  // Rank 0's own copy of its stage, not rank 2's.
  assembly_expect_equal(*assembly_find(whole, "moments.w"), Tensor::full({4, 6}, 0.0f), "moments.w");
  for (size_t r = 1; r < got.size(); ++r) {
    EXPECT_FALSE(got[r].threw) << "rank " << r << ": " << got[r].error;
  }
}

TEST(StateAssembly, AStageNoMemberHoldsIsRefusedOnEveryMember) {
  auto world = comm::make_zmq_world(3);
  // Ranks 0 and 1 run stage 0; rank 2, lost, ran stage 1 alone: nobody holds "b".
  const std::vector<TrainingState> states = {assembly_stage_state(0, true), assembly_stage_state(1, true)};
  world[2]->close();
  const std::vector<AssemblyOutcome> got = assembly_run(world, 3, states);
  for (size_t r = 0; r < got.size(); ++r) {
    EXPECT_EQ(got[r].thrown, "Error") << "rank " << r << ": " << got[r].error;
    EXPECT_THAT(got[r].error, HasSubstr("no member holds 'b'")) << "rank " << r;
    EXPECT_THAT(got[r].error, HasSubstr("its pipeline stage had no data-parallel replica")) << "rank " << r;
    EXPECT_EQ(got[r].error.find('\n'), std::string::npos) << "rank " << r << ": " << got[r].error;
  }
}

// Two stand-alone models whose Dense(6, 4) weight is sharded by hand to columns [3r, 3r + 3):
// each cuts a whole state to its blocks, notes them, and the two put it together whole again.
TEST(StateAssembly, CutNoteAndAssembleIsARoundTrip) {
  TrainingState whole;
  std::vector<float> moments;
  for (int k = 0; k < 24; ++k) moments.push_back(100.0f + static_cast<float>(k));
  std::vector<std::shared_ptr<nn::Dense>> nets;
  std::vector<std::unique_ptr<Model>> models;
  for (int r = 0; r < 2; ++r) {
    auto net = std::make_shared<nn::Dense>(6, 4);
    ParameterList params = net->get_parameters();
    ASSERT_EQ(params.size(), 2u);
    ASSERT_EQ(params[0].shape(), (Shape{4, 6}));
    params[0].shard({0, 3 * r}, {4, 3});
    models.push_back(std::make_unique<Model>(*net, std::make_shared<nn::CrossEntropyLoss>(),
                                             std::make_shared<nn::SGD>(net->trainable_params(), 0.1f, 0.9f)));
    nets.push_back(net);
  }
  const std::string weight = nets[0]->get_parameters()[0].name(), bias = nets[0]->get_parameters()[1].name();
  whole.tensors.emplace_back(weight, assembly_whole_w());
  whole.tensors.emplace_back(bias, Tensor::from_vector({4}, std::vector<float>{1, 2, 3, 4}));
  whole.tensors.emplace_back("moments." + weight, Tensor::from_vector({4, 6}, moments));
  whole.tensors.emplace_back("moments." + bias, Tensor::full({4}, 0.5f));
  whole.tensors.emplace_back("global_step", Tensor::from_vector({}, std::vector<int32_t>{kAssemblyStep}));
  whole.scalars = {{"global_step", kAssemblyStep}, {"epoch", 1}};

  std::vector<TrainingState> cut;
  for (int r = 0; r < 2; ++r) {
    cut.push_back(cut_to_held_blocks(whole, *models[static_cast<size_t>(r)]));
    const TrainingState& c = cut.back();
    ASSERT_EQ(c.tensors.size(), whole.tensors.size()) << "rank " << r;
    assembly_expect_equal(*assembly_find(c, weight), assembly_w_block(3 * r), "the weight's block");
    const Tensor* m = assembly_find(c, "moments." + weight);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(m->shape(), (Shape{4, 3}));
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        EXPECT_EQ(m->f32()[i * 3 + j], moments[static_cast<size_t>(i * 6 + 3 * r + j)]);
      }
    assembly_expect_equal(*assembly_find(c, bias), *assembly_find(whole, bias), "the bias");
    ASSERT_NE(assembly_find(c, "global_step"), nullptr);
    EXPECT_EQ(c.scalars, whole.scalars);
    note_state_blocks(cut.back(), nets[static_cast<size_t>(r)]->get_parameters());
    ASSERT_TRUE(holds_blocks(cut.back())) << "rank " << r;
    EXPECT_EQ(cut.back().scalars["blocks"][weight]["offset"], nlohmann::json({0, 3 * r}));
  }

  auto world = comm::make_zmq_world(2);
  const std::vector<AssemblyOutcome> got = assembly_run(world, 2, cut);
  ASSERT_FALSE(got[0].threw) << got[0].error;
  ASSERT_FALSE(got[1].threw) << got[1].error;
  ASSERT_TRUE(got[0].state.has_value());
  EXPECT_FALSE(got[1].state.has_value());
  const TrainingState& again = *got[0].state;
  EXPECT_FALSE(holds_blocks(again));
  EXPECT_EQ(again.scalars, whole.scalars);
  ASSERT_EQ(again.tensors.size(), whole.tensors.size());
  for (const auto& [name, t] : whole.tensors) {
    const Tensor* u = assembly_find(again, name);
    ASSERT_NE(u, nullptr) << name;
    if (t.dtype() == DType::kI32) {
      ASSERT_EQ(u->dtype(), DType::kI32) << name;
      EXPECT_EQ(u->i32()[0], t.i32()[0]) << name;
    } else {
      assembly_expect_equal(*u, t, name);
    }
  }
}

}  // namespace state_assembly_test
}  // namespace
}  // namespace sf
