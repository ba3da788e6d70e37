// Semi-auto parallel of a cross-entropy over a vocabulary split across ranks (Megatron-LM's
// vocab-parallel cross-entropy, parallel/sharding/loss_rules.cc) equals 1 device:
//   - a two-layer head (x w1, then the logits h w2 with w2's class columns split as the logits
//     are) trained 12 steps under splits of the class dim 2, 4 and 8 ways, of batch and class
//     ((2,4),(2,)), and of a padded vocabulary (C = 24, classes = 21) 3 ways on 6 ranks, or 14
//     classes 3 ways on 3 ranks (the last block all padding): every rank's loss per step within
//     1e-5 relative of the 1-device run's, every parameter block within 1e-5 of the 1-device
//     block;
//   - the logits are never gathered: the loss's first local op reads the MatMul's own block, and
//     the rows' max and sums are AllReduced (op "max", then "sum") over the class group;
//   - an unsplit class dim keeps the plain SoftmaxCrossEntropy on each rank's rows;
//   - the padding columns of w2 get no gradient: they end where they started.
#include <gtest/gtest.h>

#include "tests/parallel/train_against_one_device.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <shardflow/parallel/sharding/local_graph.h>
#include <shardflow/train/losses.h>
#include <shardflow/train/semi_auto_step.h>

namespace sf::paralleltest {
namespace {

constexpr int64_t kBatch = 8, kHidden = 16, kColumns = 24;
constexpr int64_t kSteps = 12;
constexpr uint64_t kSeed = 43;
constexpr int kWorld = 8;
constexpr float kLr = 0.5f;  // SGD's: large enough that every parameter moves well past the tolerance

// logits = (x w1) w2 over kColumns columns, of which the first `classes` are classes (the rest
// pad the vocabulary); the loss is the network's own primitive so that a case can shard it.
class Head : public nn::Cell {
 public:
  explicit Head(int64_t classes)
      : xent(register_primitive("xent", "SoftmaxCrossEntropy", {{"classes", classes}})), classes_(classes) {}

  Parameter& w1 = register_parameter("w1", {kHidden, kHidden}, "xavier_uniform");
  Parameter& w2 = register_parameter("w2", {kHidden, kColumns}, "xavier_uniform");
  Primitive& hidden = register_primitive("hidden", "MatMul");
  Primitive& logits = register_primitive("logits", "MatMul");
  Primitive& xent;

  Value construct(GraphBuilder& b, Value x) override {
    return logits(b, {hidden(b, {x, param(b, w1)}), param(b, w2)});
  }
  int64_t classes() const { return classes_; }

 private:
  int64_t classes_;
};

// Model's loss for a Head: its xent primitive.
class HeadLoss : public nn::LossFn {
 public:
  explicit HeadLoss(Head& head) : head_(head) {}
  Value operator()(GraphBuilder& b, Value logits, Value labels) const override {
    return head_.xent(b, {logits, labels});
  }

 private:
  Head& head_;
};

// kSteps batches of kBatch rows: x normal, labels uniform over the real classes.
dataset::Dataset batches(int64_t classes) {
  return dataset::Dataset::generator(
             [classes](int64_t i) {
               Tensor x({kHidden});
               for (int64_t k = 0; k < kHidden; ++k)
                 x.f32()[k] = normal_at(kSeed, 0, static_cast<uint64_t>(i * kHidden + k));
               const auto label = static_cast<int32_t>(uniform_at(kSeed, 1, static_cast<uint64_t>(i)) * classes);
               return std::vector<Tensor>{x, Tensor::from_vector({}, std::vector<int32_t>{label})};
             },
             kSteps * kBatch, {"x", "label"})
      .batch(kBatch);
}

// What one rank's local forward does with the logits.
struct LossOps {
  bool plain = false;               // SoftmaxCrossEntropy itself
  bool reads_matmul_block = false;  // the loss's first op takes the logits MatMul's output as is
  bool logits_gathered = false;     // an AllGather takes the logits MatMul's output
  std::vector<std::pair<std::string, int64_t>> all_reduces;  // of the loss's block ops: (op, group size)
};

LossOps loss_ops(const SemiAutoProgram& sp, int rank) {
  const LocalGraph local = build_local_graph(sp.global, sp.sharding, rank);
  int mm = -1;
  for (int id = 0; id < sp.global.size(); ++id)
    if (sp.global.node(id).name == "logits/MatMul") mm = local.value[id];
  LossOps out;
  for (int id = 0; id < local.graph.size(); ++id) {
    const Node& n = local.graph.node(id);
    if (n.op == "SoftmaxCrossEntropy") out.plain = true;
    if ((n.op == "SoftmaxCrossEntropy" || n.op == "CrossEntropyShardMax") && n.inputs[0] == mm)
      out.reads_matmul_block = local.graph.node(mm).op == "MatMul";
    if (n.op == "AllGather" && n.inputs[0] == mm) out.logits_gathered = true;
    if (n.op == "AllReduce" && local.graph.node(n.inputs[0]).op.rfind("CrossEntropyShard", 0) == 0)
      out.all_reduces.emplace_back(n.attrs.get_str("op"), n.attrs.get_int("group_size"));
  }
  return out;
}

using HeadRun = RanksRun<LossOps>;

// Model::train of a fresh Head over a vocabulary of `classes` with SGD; every parameter block within 1e-5 of 1
// device's. One per vocabulary, each with its own 1-device run.
const TrainAgainstOneDevice<Head, LossOps>& against_one_device(int64_t classes) {
  static std::mutex mu;
  static std::map<int64_t, std::unique_ptr<TrainAgainstOneDevice<Head, LossOps>>> harnesses;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<TrainAgainstOneDevice<Head, LossOps>>& h = harnesses[classes];
  if (!h) {
    h = std::make_unique<TrainAgainstOneDevice<Head, LossOps>>(Training<Head, LossOps>{
        .seed = kSeed,
        .steps = kSteps,
        .lr = kLr,
        .batches = [classes] { return batches(classes); },
        .loss = [](Head& net) { return std::make_shared<HeadLoss>(net); },
        .tolerance = 1e-5f,
        .make = [classes] { return std::make_unique<Head>(classes); },
        .inspect = loss_ops,
    });
  }
  return *h;
}

HeadRun train(int64_t classes, int devices, const Shard<Head>& shard) {
  return against_one_device(classes).train(devices, shard);
}

void expect_equals_one_device(const HeadRun& got, int64_t classes) {
  against_one_device(classes).expect_equals_one_device(got);
}

// Every rank's loss reads its own block of the logits and reduces the max and the sums over a
// group of `class_blocks` ranks.
void expect_vocab_parallel(const HeadRun& run, int64_t class_blocks) {
  for (size_t r = 0; r < run.seen.size(); ++r) {
    const LossOps& ops = run.seen[r];
    EXPECT_FALSE(ops.plain) << "rank " << r << "\n" << run.sharding;
    EXPECT_FALSE(ops.logits_gathered) << "rank " << r << "\n" << run.sharding;
    EXPECT_TRUE(ops.reads_matmul_block) << "rank " << r << "\n" << run.sharding;
    const std::vector<std::pair<std::string, int64_t>> want{{"max", class_blocks}, {"sum", class_blocks}};
    EXPECT_EQ(ops.all_reduces, want) << "rank " << r;
  }
}

struct VocabCase {
  std::string name;
  int64_t batch_blocks, class_blocks;
};

void PrintTo(const VocabCase& c, std::ostream* os) { *os << c.name; }

class VocabCrossEntropySemiAuto : public ::testing::TestWithParam<VocabCase> {};

// The logits MatMul and the loss split alike, so that the logits stay in their blocks.
TEST_P(VocabCrossEntropySemiAuto, LossPerStepAndParameterBlocksEqualOneDevice) {
  const VocabCase c = GetParam();
  const HeadRun run = train(kColumns, kWorld, [c](Head& n) {
    n.logits.shard({{c.batch_blocks, 1}, {1, c.class_blocks}});
    n.xent.shard({{c.batch_blocks, c.class_blocks}, {c.batch_blocks}});
  });
  expect_equals_one_device(run, kColumns);
  expect_vocab_parallel(run, c.class_blocks);
}

INSTANTIATE_TEST_SUITE_P(Splits, VocabCrossEntropySemiAuto,
                         ::testing::Values(VocabCase{"classes_2", 1, 2}, VocabCase{"classes_4", 1, 4},
                                           VocabCase{"classes_8", 1, 8}, VocabCase{"batch_2_classes_4", 2, 4}),
                         [](const auto& info) { return info.param.name; });

// A vocabulary of 21 classes padded to 24 columns so that 3 ranks hold 8 each (the last has 5
// classes and 3 padding columns), with the batch split 2 ways: 6 ranks equal 1 device, and the
// padding columns of w2 never move.
TEST(VocabCrossEntropySemiAuto, PaddedVocabularySplitThreeWaysEqualsOneDevice) {
  constexpr int64_t kClasses = 21;
  const HeadRun run = train(kClasses, 6, [](Head& n) {
    n.logits.shard({{2, 1}, {1, 3}});
    n.xent.shard({{2, 3}, {2}});
  });
  expect_equals_one_device(run, kClasses);
  expect_vocab_parallel(run, 3);
  const HeadRun& ref = against_one_device(kClasses).one_device();
  const Tensor& w2 = ref.params[0][1].value();
  ASSERT_EQ(ref.params[0][1].name(), "w2");
  for (int64_t r = 0; r < kHidden; ++r)
    for (int64_t c = kClasses; c < kColumns; ++c)
      ASSERT_EQ(w2.f32()[r * kColumns + c], ref.initial[1].f32()[r * kColumns + c]) << "w2 padding " << r << ", " << c;
}

// 14 classes in 24 columns split 3 ways: the last rank's block is padding only, its max the
// lowest float and its sums zero, and the loss still equals 1 device's.
TEST(VocabCrossEntropySemiAuto, ABlockOfPaddingOnlyEqualsOneDevice) {
  constexpr int64_t kClasses = 14;
  const HeadRun run = train(kClasses, 3, [](Head& n) {
    n.logits.shard({{1, 1}, {1, 3}});
    n.xent.shard({{1, 3}, {1}});
  });
  expect_equals_one_device(run, kClasses);
  expect_vocab_parallel(run, 3);
}

// With the class dim unsplit, each rank runs the plain op on its rows and reduces nothing itself.
TEST(VocabCrossEntropySemiAuto, AnUnsplitClassDimKeepsThePlainOp) {
  const HeadRun run = train(kColumns, kWorld, [](Head& n) { n.xent.shard({{8, 1}, {8}}); });
  expect_equals_one_device(run, kColumns);
  for (size_t r = 0; r < run.seen.size(); ++r) {
    EXPECT_TRUE(run.seen[r].plain) << "rank " << r;
    EXPECT_TRUE(run.seen[r].all_reduces.empty()) << "rank " << r;
  }
}

}  // namespace
}  // namespace sf::paralleltest
