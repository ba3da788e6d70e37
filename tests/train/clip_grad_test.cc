// Clipping by global norm (train/clip_grad.h) on one device and over ranks with a placement
// given by hand: the norm is the root of the sum of squares, gradients are scaled only above
// max_norm (and then by max_norm / (norm + 1e-6)), an optimizer with max_grad_norm updates from
// the clipped gradients without writing the caller's, and over 4 ranks holding blocks, some
// replicated, each block counts once (the norm is the whole tensors', not the naive sum's).
// Model on one device steps plain SGD outside the graph when clipping (the losses of a hand
// loop of value_and_grad, clip_by_global_norm and SGD), refuses clipping turned on after the
// in-graph step was built, and refuses it in pipeline parallel.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>
#include <shardflow/core/rng.h>
#include <shardflow/train/clip_grad.h>
#include <shardflow/train/losses.h>
#include <shardflow/train/model.h>
#include <shardflow/train/optimizer.h>
#include <shardflow/train/pipeline_cell.h>
#include <shardflow/train/value_and_grad.h>
#include "tests/train/parallel_fixture.h"
#include "tests/train/pipeline_net.h"

namespace sf::traintest {
namespace {

using ::testing::HasSubstr;

Tensor vec(const std::vector<float>& values) {
  return Tensor::from_vector({static_cast<int64_t>(values.size())}, values);
}

Parameter make_param(const std::vector<float>& values, const std::string& name) {
  Parameter p({static_cast<int64_t>(values.size())}, "zeros");
  p.finalize(name, 0);
  p.value().copy_from(vec(values));
  return p;
}

TEST(ClipGrad, NormIsTheRootOfTheSumOfSquares) {
  const std::vector<Tensor> grads{vec({3.0f, -4.0f}),
                                  Tensor::from_vector({2, 2}, std::vector<float>{12.0f, 0.0f, 0.0f, 0.0f})};
  EXPECT_DOUBLE_EQ(nn::global_grad_norm(grads), 13.0);  // sqrt(9 + 16 + 144)
  EXPECT_DOUBLE_EQ(nn::global_grad_norm({}), 0.0);
  // Small elements beside large ones still count (the sum is in double).
  std::vector<Tensor> mixed{vec({1e4f}), Tensor::full({100000}, 1e-2f)};
  EXPECT_NEAR(nn::global_grad_norm(mixed), std::sqrt(1e8 + 1e5 * 1e-4 * (1 + 1e-9)), 1e-4);
}

TEST(ClipGrad, ScalesOnlyAboveMaxNorm) {
  std::vector<Tensor> below{vec({3.0f, -4.0f}), vec({12.0f})};
  EXPECT_DOUBLE_EQ(nn::clip_by_global_norm(below, 13.5f), 13.0);
  EXPECT_EQ(below[0].to_vector(), (std::vector<float>{3.0f, -4.0f})) << "untouched below max_norm";
  EXPECT_EQ(below[1].to_vector(), (std::vector<float>{12.0f}));
  // Equal to the norm: the factor is 13 / (13 + 1e-6) < 1, as PyTorch's.
  std::vector<Tensor> at{vec({3.0f, -4.0f}), vec({12.0f})};
  nn::clip_by_global_norm(at, 13.0f);
  EXPECT_LT(at[1].f32()[0], 12.0f);
  EXPECT_NEAR(at[1].f32()[0], 12.0f, 1e-5f);

  std::vector<Tensor> above{vec({3.0f, -4.0f}), vec({12.0f})};
  EXPECT_DOUBLE_EQ(nn::clip_by_global_norm(above, 6.5f), 13.0);
  const double scale = 6.5 / (13.0 + 1e-6);
  EXPECT_FLOAT_EQ(above[0].f32()[0], static_cast<float>(3.0 * scale));
  EXPECT_FLOAT_EQ(above[0].f32()[1], static_cast<float>(-4.0 * scale));
  EXPECT_FLOAT_EQ(above[1].f32()[0], static_cast<float>(12.0 * scale));
  EXPECT_NEAR(nn::global_grad_norm(above), 6.5, 1e-5) << "the clipped gradients have norm max_norm";

  std::vector<Tensor> zero{vec({0.0f, 0.0f})};
  EXPECT_DOUBLE_EQ(nn::clip_by_global_norm(zero, 1.0f), 0.0);
  EXPECT_EQ(zero[0].to_vector(), (std::vector<float>{0.0f, 0.0f}));
}

TEST(ClipGrad, RefusesBadMaxNormAndPlacement) {
  std::vector<Tensor> g{vec({1.0f})};
  for (float bad : {0.0f, -1.0f, NAN, INFINITY}) {
    try {
      nn::clip_by_global_norm(g, bad);
      ADD_FAILURE() << "max_norm " << bad << " accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_THAT(e.what(), HasSubstr("max_norm must be positive"));
    }
  }
  EXPECT_THROW(nn::global_grad_norm(g, {.counted = {true, false}}), InvalidArgument);
  Parameter w = make_param({1.0f}, "w");
  nn::SGD opt({w}, 0.1f);
  EXPECT_THROW(opt.set_grad_placement({.counted = {true, true}}), InvalidArgument);
}

TEST(ClipGrad, OptimizerStepsOnClippedGradientsOnlyAboveMaxNorm) {
  // Plain SGD: p -= lr * g, so the update shows the gradient it read.
  Parameter a = make_param({1.0f, 1.0f}, "a");
  Parameter b = make_param({1.0f}, "b");
  nn::SGD opt({a, b}, 0.5f);
  EXPECT_TRUE(opt.in_graph_sgd_rate().has_value());
  opt.set_max_grad_norm(10.0f);
  EXPECT_FALSE(opt.in_graph_sgd_rate().has_value()) << "clipping needs every gradient before the update";
  EXPECT_EQ(opt.max_grad_norm(), std::optional<float>(10.0f));
  EXPECT_FALSE(opt.last_grad_norm().has_value());

  // Norm 5 <= 10: the plain SGD update, bitwise.
  opt.step({vec({3.0f, 0.0f}), vec({4.0f})});
  EXPECT_EQ(opt.last_grad_norm(), std::optional<double>(5.0));
  EXPECT_EQ(a.value().to_vector(), (std::vector<float>{1.0f - 0.5f * 3.0f, 1.0f}));
  EXPECT_EQ(b.value().to_vector(), (std::vector<float>{1.0f - 0.5f * 4.0f}));

  // Norm 26 > 10: the gradients scaled by 10 / 26; the caller's tensors keep their values.
  const std::vector<Tensor> big{vec({0.0f, 24.0f}), vec({-10.0f})};
  const float a1 = a.value().f32()[1], b0 = b.value().f32()[0];
  opt.step(big);
  EXPECT_EQ(opt.last_grad_norm(), std::optional<double>(26.0));
  const auto scale = static_cast<float>(10.0 / (26.0 + 1e-6));
  EXPECT_FLOAT_EQ(a.value().f32()[1], a1 - 0.5f * (24.0f * scale));
  EXPECT_FLOAT_EQ(b.value().f32()[0], b0 - 0.5f * (-10.0f * scale));
  EXPECT_EQ(big[0].to_vector(), (std::vector<float>{0.0f, 24.0f})) << "the caller's gradients are not written";
  EXPECT_EQ(big[1].to_vector(), (std::vector<float>{-10.0f}));
  EXPECT_EQ(opt.hyper_parameters().at("max_grad_norm"), 10.0);

  // Off again: a norm of 26 is applied whole.
  opt.set_max_grad_norm(std::nullopt);
  const float b1 = b.value().f32()[0];
  opt.step(big);
  EXPECT_FLOAT_EQ(b.value().f32()[0], b1 + 5.0f);
  EXPECT_EQ(opt.hyper_parameters().count("max_grad_norm"), 0u);
}

// 4 ranks, three gradients of one device's network:
//   A (8,): cut in 4 blocks of 2, one per rank (no replica);
//   B (3,): replicated on all 4 ranks;
//   C (4,): cut in 2 blocks of 2, each held by 2 ranks ({0, 1} block 0, {2, 3} block 1).
// The counted flags are what SemiAutoStep sets: the lowest rank of each replica group.
TEST(ClipGrad, PlacementCountsEveryBlockOnceOverRanks) {
  const std::vector<float> A{1, -2, 3, -4, 5, -6, 7, -8}, B{0.5f, 9, -1.5f}, C{2, 2, -3, 10};
  double whole = 0;
  for (const auto* t : {&A, &B, &C})
    for (float x : *t) whole += static_cast<double>(x) * x;
  const double one_device = std::sqrt(whole);
  std::vector<double> norms(4), naive(4), local(4), clipped_norms(4);
  run_world(4, Wire::kInproc, [&](int rank) {
    const comm::Group world = comm::current_rank().world();
    auto block = [](const std::vector<float>& t, int64_t i, int64_t n) {
      return vec(std::vector<float>(t.begin() + i * n, t.begin() + (i + 1) * n));
    };
    std::vector<Tensor> grads{block(A, rank, 2), vec(B), block(C, rank / 2, 2)};
    const nn::GradPlacement placement{.counted = {true, rank == 0, rank % 2 == 0}, .group = world};
    norms[rank] = nn::global_grad_norm(grads, placement);
    naive[rank] = nn::global_grad_norm(grads, {.counted = {}, .group = world});
    local[rank] = nn::global_grad_norm(grads);
    // Clipping scales every rank's blocks by the same factor: the clipped whole has norm max_norm.
    nn::clip_by_global_norm(grads, 4.0f, placement);
    clipped_norms[rank] = nn::global_grad_norm(grads, placement);
  });
  for (int rank = 0; rank < 4; ++rank) {
    SCOPED_TRACE(rank);
    EXPECT_NEAR(norms[rank], one_device, 1e-6 * one_device);
    EXPECT_EQ(norms[rank], norms[0]) << "every rank gets the same norm";
    EXPECT_NEAR(clipped_norms[rank], 4.0, 1e-5);
    // Counting each copy (B 4 times, C twice) inflates it; one rank's blocks alone fall short.
    EXPECT_GT(naive[rank], 1.2 * one_device);
    EXPECT_LT(local[rank], 0.9 * one_device);
  }
}

// --- Model on one device ---------------------------------------------------------------------

struct Losses : Callback {
  std::vector<float> losses;
  std::vector<double> norms;
  void on_step_end(const RunContext& ctx) override {
    losses.push_back(ctx.loss);
    norms.push_back(ctx.optimizer->last_grad_norm().value_or(-1));
  }
};

// Plain SGD (lr 0.1) on a 2-layer MLP, 6 steps of 8 rows; clipped at `max_norm` if given.
Losses train_sgd(std::optional<float> max_norm) {
  set_seed(2);
  auto net = pipe_net(2);
  auto opt = std::make_shared<nn::SGD>(net->trainable_params(), 0.1f);
  opt->set_max_grad_norm(max_norm);
  Model model(*net, std::make_shared<nn::CrossEntropyLoss>(), opt);
  auto log = std::make_shared<Losses>();
  model.train(1, pipe_rows(48).batch(8), {log});
  set_seed(0);
  return *log;
}

TEST(ClipGrad, ModelClipsPlainSgdAsAHandWrittenLoop) {
  const Losses plain = train_sgd(std::nullopt), loose = train_sgd(1e6f), tight = train_sgd(0.1f);
  ASSERT_EQ(plain.losses.size(), 6u);
  // A threshold never reached: the SGD step moves out of the graph, the run stays the same.
  for (size_t s = 0; s < plain.losses.size(); ++s) {
    EXPECT_NEAR(loose.losses[s], plain.losses[s], 1e-5 * std::abs(plain.losses[s])) << s;
    EXPECT_GT(loose.norms[s], 0.1);
    EXPECT_EQ(plain.norms[s], -1) << "no norm is computed without clipping";
  }
  // The hand loop: value_and_grad, clip_by_global_norm, SGD.
  set_seed(2);
  auto net = pipe_net(2);
  ParameterList params = net->trainable_params();
  nn::SGD sgd(params, 0.1f);
  GradFunction grad([&](GraphBuilder& b, const std::vector<Value>& in) {
    return nn::CrossEntropyLoss()(b, (*net)(b, in[0]), in[1]);
  }, params);
  dataset::BatchIterator it = pipe_rows(48).batch(8).iterator(0);
  for (size_t s = 0; s < tight.losses.size(); ++s) {
    const std::vector<Tensor>* batch = it.next();
    ASSERT_NE(batch, nullptr);
    const auto r = grad(*batch);
    std::vector<Tensor> g;
    for (const Tensor& t : r.grads) g.push_back(t.clone());
    const double norm = nn::clip_by_global_norm(g, 0.1f);
    sgd.step(g);
    EXPECT_GT(norm, 0.1) << "clipping is active at step " << s + 1;
    EXPECT_NEAR(tight.norms[s], norm, 1e-5 * norm) << s;
    EXPECT_NEAR(tight.losses[s], r.loss, 1e-5 * std::abs(r.loss)) << s;
  }
  set_seed(0);
  EXPECT_GT(std::abs(tight.losses.back() - plain.losses.back()), 1e-3) << "clipping changed the run";
}

TEST(ClipGrad, ModelRefusesClippingTurnedOnAfterTheInGraphStepWasBuilt) {
  set_seed(2);
  auto net = pipe_net(2);
  auto opt = std::make_shared<nn::SGD>(net->trainable_params(), 0.1f);
  Model model(*net, std::make_shared<nn::CrossEntropyLoss>(), opt);
  const dataset::Dataset data = pipe_rows(16).batch(8);
  model.train(1, data);
  opt->set_max_grad_norm(1.0f);
  try {
    model.train(2, data, {}, 1);
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("compiled into the training graph"));
    EXPECT_THAT(e.what(), HasSubstr("max_grad_norm"));
  }
  EXPECT_EQ(opt->global_step(), 2) << "no step was taken";
  set_seed(0);
}

TEST(ClipGrad, PipelineParallelRefusesClipping) {
  ParallelContextGuard guard({.parallel_mode = ParallelMode::kSemiAutoParallel, .gradients_mean = true,
                              .dataset_strategy = "full_batch", .pipeline_stages = 2});
  std::vector<std::string> errors(2);
  run_world(2, Wire::kInproc, [&](int rank) {
    set_seed(6);
    auto net = pipe_net(4, {0, 0, 1, 1});
    nn::PipelineCell pipe(nn::WithLossCell(*net, nn::CrossEntropyLoss()), 2);
    auto opt = std::make_shared<nn::Momentum>(net->infer_param_pipeline_stage(), 0.02f, 0.9f);
    opt->set_max_grad_norm(1.0f);
    Model model(pipe, opt);
    try {
      model.train(1, pipe_rows(16).batch(8));
    } catch (const InvalidArgument& e) {
      errors[rank] = e.what();
    }
  });
  set_seed(0);
  for (const std::string& e : errors) EXPECT_THAT(e, HasSubstr("not supported in pipeline parallel"));
}

}  // namespace
}  // namespace sf::traintest
