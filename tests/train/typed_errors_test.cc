// Model::train rethrows the error that was thrown, typed, in every parallel mode: a peer that
// dies mid-training is a PeerLost naming its rank on the others (data parallel: in the gradient
// AllReduce; operator parallel: in a sharded op's AllReduce; pipeline: in a stage's send or
// receive, naming the stage and the action), and a kernel's InvalidArgument stays one, naming
// its op once (core/error_context.h).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include "tests/train/parallel_fixture.h"
#include "tests/train/pipeline_net.h"
#include <shardflow/train/mlp.h>
#include <shardflow/train/model.h>
#include <shardflow/train/pipeline_cell.h>

namespace sf::traintest {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace typed_errors_test {

using Clock = std::chrono::steady_clock;

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

// Rank `rank` throws after step `step` of its epoch (its endpoint then closes: run_world).
struct DieAfter : Callback {
  DieAfter(int r, int d, int64_t s) : rank(r), dies(d), step(s) {}
  int rank, dies;
  int64_t step;
  void on_step_end(const RunContext& ctx) override {
    if (rank == dies && ctx.step_in_epoch == step) throw Error(fmt::format("rank {} stops", rank));
  }
};

// Runs fn(rank) on n ranks; returns each rank's exception (null where it finished).
std::vector<std::exception_ptr> errors_of(int n, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(n);
  const auto start = Clock::now();
  EXPECT_ANY_THROW(run_world(n, Wire::kInproc, [&](int rank) {
    try {
      fn(rank);
    } catch (...) {
      errors[rank] = std::current_exception();
      throw;
    }
  }));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(20));
  return errors;
}

// The rank's error is a PeerLost naming `lost`, its message containing `part`.
void expect_peer_lost(const std::exception_ptr& error, int lost, const std::string& part) {
  ASSERT_TRUE(error) << "no error";
  try {
    std::rethrow_exception(error);
  } catch (const PeerLost& e) {
    EXPECT_EQ(e.rank(), lost) << e.what();
    EXPECT_THAT(e.what(), testing::HasSubstr(part));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a PeerLost: " << e.what();
  }
}

// The rank's error is an InvalidArgument naming the loss op once, its message containing `part`.
void expect_bad_label(const std::exception_ptr& error, const std::string& part) {
  ASSERT_TRUE(error) << "no error";
  try {
    std::rethrow_exception(error);
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(count_of(e.what(), "SoftmaxCrossEntropy '"), 1u) << e.what();
    EXPECT_THAT(e.what(), testing::HasSubstr(part));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an InvalidArgument: " << e.what();
  }
}

TEST(TypedErrors, DataParallelPeerLostInTheGradientAllReduceReachesTrainAsPeerLost) {
  ParallelContextGuard ctx({.parallel_mode = ParallelMode::kDataParallel, .gradients_mean = true});
  const auto errors = errors_of(2, [](int rank) {
    nn::Mlp net(784, {16}, 10);
    Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f));
    model.train(1, image_rows(16 * 8, 2, rank).batch(8), {std::make_shared<DieAfter>(rank, 1, 2)});
  });
  expect_peer_lost(errors[0], 1, "AllReduce '");
}

// MatMul sharded over 2 ranks on its inner dimension: the partial products are summed by an
// AllReduce in the forward.
class ShardedNet : public nn::Cell {
 public:
  Parameter& w1 = register_parameter("w1", {784, 16}, "xavier_uniform");
  Parameter& w2 = register_parameter("w2", {16, 10}, "xavier_uniform");
  Primitive& matmul1 = register_primitive("matmul1", "MatMul");
  Primitive& relu = register_primitive("relu", "ReLU");
  Primitive& matmul2 = register_primitive("matmul2", "MatMul");
  Value construct(GraphBuilder& b, Value x) override {
    return matmul2(b, {relu(b, {matmul1(b, {x, param(b, w1)})}), param(b, w2)});
  }
};

TEST(TypedErrors, OperatorParallelPeerLostInAShardedOpReachesTrainAsPeerLost) {
  ParallelContextGuard ctx({.parallel_mode = ParallelMode::kSemiAutoParallel});
  const auto errors = errors_of(2, [](int rank) {
    ShardedNet net;
    net.matmul1.shard({{1, 1}, {1, 2}});
    net.relu.shard({{1, 2}});
    net.matmul2.shard({{1, 2}, {2, 1}});
    Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f));
    model.train(1, image_rows(16 * 8).batch(16), {std::make_shared<DieAfter>(rank, 1, 2)});
  });
  expect_peer_lost(errors[0], 1, "AllReduce '");
}

AutoParallelContext two_stages() {
  return {.parallel_mode = ParallelMode::kSemiAutoParallel, .gradients_mean = true, .dataset_strategy = "full_batch",
          .pipeline_stages = 2};
}

TEST(TypedErrors, PipelinePeerLostNamesTheRankTheStageAndTheAction) {
  ParallelContextGuard guard(two_stages());
  const auto errors = errors_of(2, [](int rank) {
    auto net = pipe_net(2, {0, 1});
    nn::PipelineCell pipe(nn::WithLossCell(*net, nn::CrossEntropyLoss()), 2);
    Model model(pipe, nn::Momentum(net->infer_param_pipeline_stage(), 0.02f, 0.9f));
    model.train(1, pipe_rows(8 * 10).batch(8), {std::make_shared<DieAfter>(rank, 1, 3)});
  });
  expect_peer_lost(errors[0], 1, "pipeline: stage 0, ");
}

// `rows` rows of pipe_rows' features, labelled 1 but row `bad`, labelled 12 (of 10 classes).
dataset::Dataset rows_with_a_bad_label(int64_t rows, int64_t bad) {
  return dataset::Dataset::generator(
      [bad](int64_t i) {
        Tensor x({kPipeFeatures});
        for (int64_t k = 0; k < kPipeFeatures; ++k)
          x.f32()[k] = normal_at(11, 0, static_cast<uint64_t>(i * kPipeFeatures + k));
        return std::vector<Tensor>{x, Tensor::from_vector({}, std::vector<int32_t>{i == bad ? 12 : 1})};
      },
      rows, {"x", "label"});
}

TEST(TypedErrors, AKernelErrorInTrainStaysInvalidArgumentNamingTheOpOnce) {
  auto net = pipe_net(2);
  Model model(*net, nn::CrossEntropyLoss(), nn::SGD(net->trainable_params(), 0.1f));
  std::exception_ptr error;
  try {
    model.train(1, rows_with_a_bad_label(16, 11).batch(8));
  } catch (...) {
    error = std::current_exception();
  }
  expect_bad_label(error, "label 12 of row 3 is out of range [0, 10)");
}

TEST(TypedErrors, AKernelErrorOnAPipelineStageStaysInvalidArgumentNamingTheOpOnce) {
  ParallelContextGuard guard(two_stages());
  const auto errors = errors_of(2, [](int) {
    auto net = pipe_net(2, {0, 1});
    nn::PipelineCell pipe(nn::WithLossCell(*net, nn::CrossEntropyLoss()), 2);
    Model model(pipe, nn::Momentum(net->infer_param_pipeline_stage(), 0.02f, 0.9f));
    model.train(1, rows_with_a_bad_label(8 * 2, 5).batch(8));  // row 5: micro-batch 1, its row 1
  });
  expect_bad_label(errors[1], "pipeline: stage 1, F1: ");
  expect_peer_lost(errors[0], 1, "pipeline: stage 0, ");
}

}  // namespace typed_errors_test
}  // namespace
}  // namespace sf::traintest
