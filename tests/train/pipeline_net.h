// Test support for pipeline parallel: a small MLP whose layers can be put on stages, toy rows
// to train it on, and the 1-device reference — micro-batches run one after another through
// GradFunction, losses and gradients summed (PipelineCell's loss), Momentum on the sums.
#pragma once

#include <memory>
#include <vector>

#include <shardflow/core/rng.h>
#include <shardflow/data/dataset.h>
#include <shardflow/train/layers.h>
#include <shardflow/train/losses.h>
#include <shardflow/train/optimizer.h>
#include <shardflow/train/value_and_grad.h>

namespace sf::traintest {

inline constexpr int64_t kPipeFeatures = 12;

// Dense(12,24) ReLU Dense(24,24) ReLU ... Dense(24,10): `layers` Dense cells, each with its
// ReLU in one SequentialCell "i" so that one stage number covers both. stage[i] < 0: none.
inline std::shared_ptr<nn::SequentialCell> pipe_net(int layers, const std::vector<int>& stage = {}) {
  std::vector<nn::CellPtr> cells;
  for (int i = 0; i < layers; ++i) {
    const int64_t in = i == 0 ? kPipeFeatures : 24, out = i == layers - 1 ? 10 : 24;
    std::vector<nn::CellPtr> parts{std::make_shared<nn::Dense>(in, out)};
    if (i < layers - 1) parts.push_back(std::make_shared<nn::ReLU>());
    auto block = std::make_shared<nn::SequentialCell>(parts);
    if (i < static_cast<int>(stage.size()) && stage[i] >= 0) block->set_pipeline_stage(stage[i]);
    cells.push_back(block);
  }
  return std::make_shared<nn::SequentialCell>(cells);
}

inline dataset::Dataset pipe_rows(int64_t rows, uint64_t seed = 11) {
  return dataset::Dataset::generator(
      [seed](int64_t i) {
        Tensor x({kPipeFeatures});
        for (int64_t k = 0; k < kPipeFeatures; ++k)
          x.f32()[k] = normal_at(seed, 0, static_cast<uint64_t>(i * kPipeFeatures + k));
        // A label the features decide (the sign pattern of three of them), so the loss falls.
        const auto label = static_cast<int32_t>((x.f32()[0] > 0) + 2 * (x.f32()[1] > 0) + 4 * (x.f32()[2] > 0));
        return std::vector<Tensor>{x, Tensor::from_vector({}, std::vector<int32_t>{label})};
      },
      rows, {"x", "label"});
}

// Per-step losses of `steps` steps on 1 device: each batch as `micro` micro-batches.
inline std::vector<float> one_device_pipeline_losses(nn::Cell& net, const dataset::Dataset& batches, int micro,
                                                     int steps, float lr = 0.02f) {
  ParameterList params = net.trainable_params();
  nn::Momentum opt(params, lr, 0.9f);
  GradFunction grad([&](GraphBuilder& b, const std::vector<Value>& in) {
    return nn::CrossEntropyLoss()(b, net(b, in[0]), in[1]);
  }, params);
  std::vector<float> losses;
  dataset::BatchIterator it = batches.iterator(0);
  while (const std::vector<Tensor>* batch = it.next()) {
    if (static_cast<int>(losses.size()) == steps) break;
    const int64_t rows = (*batch)[0].dim(0) / micro;
    std::vector<Tensor> sum;
    float loss = 0;
    for (int i = 0; i < micro; ++i) {
      auto r = grad({(*batch)[0].rows(i * rows, (i + 1) * rows), (*batch)[1].rows(i * rows, (i + 1) * rows)});
      loss += r.loss;
      for (size_t g = 0; g < r.grads.size(); ++g) {
        if (sum.size() <= g) sum.push_back(Tensor::zeros(r.grads[g].shape()));
        for (int64_t k = 0; k < sum[g].numel(); ++k) sum[g].f32()[k] += r.grads[g].f32()[k];
      }
    }
    opt.step(sum);
    losses.push_back(loss);
  }
  return losses;
}

}  // namespace sf::traintest
