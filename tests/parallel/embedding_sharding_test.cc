// Semi-auto parallel of EmbeddingLookup (vocabulary parallel, Megatron-LM's
// VocabParallelEmbedding) equals 1 device:
//   - a token embedding scaled per hidden unit, ids (batch 8, sequence 8) of a vocabulary of
//     32 fed as an i32 input column, a sum of squared errors against an f32 target, trains 10
//     steps on 8 virtual ranks under strategies that split the vocabulary over 8 or 4 ranks
//     (the ids replicated or split by batch), the hidden dim, the batch, the vocabulary and the
//     batch together, and the vocabulary with an out_strategy splitting the sequence; every
//     rank's loss per step equals the 1-device run's and every parameter block the 1-device
//     block;
//   - the lowering: each rank's local lookup starts at its block's first row of the vocabulary
//     and checks ids against the whole vocabulary; the partial lookups are summed by AllReduce,
//     or by ReduceScatter under the sequence-splitting out_strategy;
//   - the rule's layouts: a vocabulary split leaves the output partial (and its gradient's
//     batch split leaves the table's gradient partial), a hidden or batch split does not.
#include <gtest/gtest.h>

#include "tests/parallel/train_against_one_device.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/core/error.h>
#include <shardflow/parallel/sharding/op_sharding.h>
#include <shardflow/train/semi_auto_step.h>

namespace sf::paralleltest {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace embedding_sharding_test {

constexpr int64_t kBatch = 8, kSeq = 8, kHidden = 16, kVocab = 32;
constexpr int64_t kSteps = 10;
constexpr uint64_t kSeed = 43;
constexpr int kWorld = 8;
constexpr const char* kLookupName = "wte/EmbeddingLookup";

// ids -> EmbeddingLookup(table) -> * s. Both are Primitives so that a case can shard them; the
// table's rows and s both get a gradient.
class TokenEmbedding : public nn::Cell {
 public:
  static constexpr float kLr = 0.05f;  // SGD's
  Parameter& table = register_parameter("table", {kVocab, kHidden}, "uniform");
  Parameter& s = register_parameter("s", {kHidden}, "ones");
  Primitive& wte = register_primitive("wte", "EmbeddingLookup");
  Primitive& scale = register_primitive("scale", "Mul");

  Value construct(GraphBuilder& b, Value ids) override {
    return scale(b, {wte(b, {param(b, table), ids}), param(b, s)});
  }
};

// Row i: ids (kSeq,) i32, uniform over the vocabulary (a batch of 64 ids reaches most rows, some
// twice), and a target (kSeq, kHidden) uniform in [0, 0.5).
std::vector<Tensor> row(int64_t i) {
  Tensor ids({kSeq}, DType::kI32), t({kSeq, kHidden});
  for (int64_t k = 0; k < kSeq; ++k)
    ids.i32()[k] = static_cast<int32_t>(uniform_at(kSeed, 0, static_cast<uint64_t>(i * kSeq + k)) * kVocab);
  for (int64_t k = 0; k < t.numel(); ++k)
    t.f32()[k] = 0.5f * uniform_at(kSeed, 1, static_cast<uint64_t>(i * t.numel() + k));
  return {ids, t};
}

dataset::Dataset batches() {
  return dataset::Dataset::generator(row, kSteps * kBatch, {"ids", "target"}).batch(kBatch);
}

// What a rank's local forward graph does around the lookup.
struct LookupOps {
  int64_t offset = -1, vocab = -1;         // the local lookup's attrs
  std::map<std::string, int> collectives;  // the ops after the lookup ("<name>/out/..."), counted
};

LookupOps lookup_ops(const SemiAutoProgram& sp, int /*rank*/) {
  LookupOps out;
  const Graph& local = sp.program.graph;
  for (int id = 0; id < sp.forward_nodes; ++id) {
    const Node& n = local.node(id);
    if (n.name == kLookupName) {
      out.offset = n.attrs.get_int("offset", -1);
      out.vocab = n.attrs.get_int("vocab", -1);
    }
    if (n.name.starts_with(std::string(kLookupName) + "/out/")) ++out.collectives[n.op];
  }
  return out;
}

// Model::train of a fresh TokenEmbedding with SGD on the sum of squared errors (a sum, so that each row of the
// table moves by a step well above the tolerance); the 1-device run must halve its loss, and every parameter block
// be within 1e-5 of 1 device's.
const TrainAgainstOneDevice<TokenEmbedding, LookupOps>& against_one_device() {
  static const TrainAgainstOneDevice<TokenEmbedding, LookupOps> harness({
      .seed = kSeed,
      .steps = kSteps,
      .lr = TokenEmbedding::kLr,
      .batches = batches,
      .loss = [](TokenEmbedding&) { return std::make_shared<SquaredErrorSum>(); },
      .tolerance = 1e-5f,
      .learns_to = 0.5f,
      .inspect = lookup_ops,
  });
  return harness;
}

using EmbeddingRun = RanksRun<LookupOps>;

EmbeddingRun train(const Shard<TokenEmbedding>& shard) { return against_one_device().train(kWorld, shard); }

void expect_equals_one_device(const EmbeddingRun& got) { against_one_device().expect_equals_one_device(got); }

struct EmbeddingCase {
  std::string name;
  Shard<TokenEmbedding> shard;
};

void PrintTo(const EmbeddingCase& c, std::ostream* os) { *os << c.name; }

class EmbeddingSemiAuto : public ::testing::TestWithParam<EmbeddingCase> {};

TEST_P(EmbeddingSemiAuto, LossPerStepAndParameterBlocksEqualOneDevice) {
  expect_equals_one_device(train(GetParam().shard));
}

// clang-format off
std::vector<EmbeddingCase> cases() {
  using E = TokenEmbedding;
  return {
      {"all_default_batch_split", [](E&) {}},
      {"vocab_split_8", [](E& n) { n.wte.shard({{8, 1}, {1, 1}}); }},
      {"vocab_split_4_repeated", [](E& n) { n.wte.shard({{4, 1}, {1, 1}}); }},
      {"vocab_split_4_batch_split_2", [](E& n) { n.wte.shard({{4, 1}, {2, 1}}); }},
      {"hidden_split", [](E& n) { n.wte.shard({{1, 8}, {1, 1}}); }},
      {"batch_split", [](E& n) { n.wte.shard({{1, 1}, {8, 1}}); }},
      {"batch_and_sequence_split", [](E& n) { n.wte.shard({{1, 1}, {2, 4}}); }},
      {"vocab_and_hidden_split", [](E& n) { n.wte.shard({{2, 4}, {1, 1}}); }},
      // The partial sums of the vocabulary split are reduce-scattered onto the sequence.
      {"vocab_split_reducescatter_sequence", [](E& n) {
         n.wte.shard({{8, 1}, {1, 1}}, {{1, 8, 1}});
         n.scale.shard({{1, 8, 1}, {1}});
       }},
  };
}
// clang-format on

INSTANTIATE_TEST_SUITE_P(Strategies, EmbeddingSemiAuto, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// Under a vocabulary split over 8, rank r's local lookup holds rows [4r, 4r + 4) of the 32 and
// checks ids against all 32; the partial lookups are summed by one AllReduce.
TEST(EmbeddingSemiAutoLowering, EachRankLooksUpItsOwnRowsAndTheSumIsAnAllReduce) {
  const EmbeddingRun run = train([](TokenEmbedding& n) { n.wte.shard({{8, 1}, {1, 1}}); });
  expect_equals_one_device(run);
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(run.seen[r].offset, 4 * r) << "rank " << r;
    EXPECT_EQ(run.seen[r].vocab, kVocab) << "rank " << r;
  }
  EXPECT_EQ(run.seen[0].collectives, (std::map<std::string, int>{{"AllReduce", 1}})) << run.sharding;
}

// With 4 vocabulary blocks and the batch split in 2, the ranks of each batch half hold the 4
// blocks in turn.
TEST(EmbeddingSemiAutoLowering, VocabAndBatchSplitOffsetsFollowTheDeviceMatrix) {
  const EmbeddingRun run = train([](TokenEmbedding& n) { n.wte.shard({{4, 1}, {2, 1}}); });
  expect_equals_one_device(run);
  // The device matrix is in loop order (batch 2, sequence 1, vocab 4, hidden 1): rank r's vocab
  // block is r % 4.
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(run.seen[r].offset, 8 * (r % 4)) << "rank " << r << "\n" << run.sharding;
}

TEST(EmbeddingSemiAutoLowering, AnOutStrategySplittingTheSequenceMakesItAReduceScatter) {
  const EmbeddingRun run = train([](TokenEmbedding& n) {
    n.wte.shard({{8, 1}, {1, 1}}, {{1, 8, 1}});
    n.scale.shard({{1, 8, 1}, {1}});
  });
  expect_equals_one_device(run);
  // One ReduceScatter and no AllReduce (the scatter onto dim 1 slices and joins around it).
  const std::map<std::string, int>& collectives = run.seen[0].collectives;
  EXPECT_EQ(collectives.count("ReduceScatter") ? collectives.at("ReduceScatter") : 0, 1) << run.sharding;
  EXPECT_EQ(collectives.count("AllReduce"), 0u) << run.sharding;
}

// The rule's layouts on 8 devices, checked through shard_op.
struct RuleGraph {
  Graph g;
  GraphBuilder b{g};
  Value table = b.parameter("table", {kVocab, kHidden});
  Value ids = b.input("ids", {kBatch, kSeq}, DType::kI32);
  Value y = b.embedding(table, ids);
  const Node& lookup() const { return g.node(y.id); }
  const std::vector<Shape> shapes{{kVocab, kHidden}, {kBatch, kSeq}};
};

TEST(EmbeddingRules, AVocabSplitLeavesTheOutputPartial) {
  RuleGraph r;
  const OpSharding s = shard_op(r.lookup(), r.shapes, OpStrategy{{{8, 1}, {1, 1}}}, 8);
  EXPECT_EQ(s.inputs[0].splits(0), 8);
  EXPECT_EQ(s.inputs[1].splits(0), 1);
  EXPECT_TRUE(s.output.is_partial());
  EXPECT_FALSE(s.carried.is_partial());
  for (int d = 0; d < 3; ++d) EXPECT_EQ(s.output.splits(d), 1) << "dim " << d;
  // With the batch split too, the output is split by batch and partial over the vocab's axis.
  const OpSharding vb = shard_op(r.lookup(), r.shapes, OpStrategy{{{4, 1}, {2, 1}}}, 8);
  EXPECT_TRUE(vb.output.is_partial());
  EXPECT_EQ(vb.output.splits(0), 2);
}

TEST(EmbeddingRules, HiddenAndBatchSplitsAreNotPartial) {
  RuleGraph r;
  const OpSharding h = shard_op(r.lookup(), r.shapes, OpStrategy{{{1, 8}, {1, 1}}}, 8);
  EXPECT_FALSE(h.output.is_partial());
  EXPECT_EQ(h.output.splits(2), 8);
  const OpSharding b = shard_op(r.lookup(), r.shapes, OpStrategy{{{1, 1}, {2, 4}}}, 8);
  EXPECT_FALSE(b.output.is_partial());
  EXPECT_EQ(b.output.splits(0), 2);
  EXPECT_EQ(b.output.splits(1), 4);
  EXPECT_EQ(b.inputs[0].splits(0), 1);
  // The default strategy splits the batch over every device.
  EXPECT_EQ(default_strategy(r.lookup(), r.shapes, 8).str(), (OpStrategy{{{1, 1}, {8, 1}}}.str()));
  // A split that does not divide its dim is refused: 3 blocks of the sequence's 8.
  EXPECT_THROW(shard_op(r.lookup(), r.shapes, OpStrategy{{{1, 1}, {1, 3}}}, 8), InvalidArgument);
}

TEST(EmbeddingRules, TheGradientOfABatchSplitIsPartialOverTheBatch) {
  RuleGraph r;
  const Value dout = r.b.input("dout", {kBatch, kSeq, kHidden});
  const Value dt = r.b.op("EmbeddingLookupGrad", {r.ids, dout}, {{"rows", kVocab}});
  const OpSharding s =
      shard_op(r.g.node(dt.id), {{kBatch, kSeq}, {kBatch, kSeq, kHidden}}, OpStrategy{{{8, 1}, {8, 1, 1}}}, 8);
  EXPECT_TRUE(s.output.is_partial());
  EXPECT_FALSE(s.carried.is_partial());
  const OpSharding h =
      shard_op(r.g.node(dt.id), {{kBatch, kSeq}, {kBatch, kSeq, kHidden}}, OpStrategy{{{1, 1}, {1, 1, 8}}}, 8);
  EXPECT_FALSE(h.output.is_partial());
  EXPECT_EQ(h.output.splits(1), 8);
}

}  // namespace embedding_sharding_test
}  // namespace
}  // namespace sf::paralleltest
