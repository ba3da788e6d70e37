// Test support for semi-auto parallel: small networks that together use every op with a
// sharding rule, their data, the 1-device run of each (computed once per network and
// optimizer), and a run of Model::train on N virtual ranks in semi-auto mode with the
// strategies a case puts on the network. Each rank's loss per step and its parameter blocks
// come back for comparison with 1 device.
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <shardflow/parallel/layout.h>
#include "tests/train/parallel_fixture.h"
#include <shardflow/train/losses.h>
#include <shardflow/train/model.h>

namespace sf::paralleltest {

constexpr int64_t kSteps = 20;
constexpr int64_t kBatch = 16;
constexpr uint64_t kSeed = 11;
constexpr int kWorld = 8;  // virtual ranks of the equivalence tests

enum class NetKind { kClassifier, kTransposed, kReshapeReduce, kSeed001, kSeed002 };

// Flatten, MatMul, BiasAdd, ReLU, MatMul (transpose_b), Mul and Sub with broadcasting, Add,
// ReLU, MatMul; trained with softmax cross entropy on 8 classes. x is (16, 4, 4).
class ClassifierNet : public nn::Cell {
 public:
  static constexpr NetKind kKind = NetKind::kClassifier;
  Parameter& w1 = register_parameter("w1", {16, 32}, "xavier_uniform");
  Parameter& b1 = register_parameter("b1", {32}, "uniform");
  Parameter& w2 = register_parameter("w2", {32, 32}, "xavier_uniform");  // (out, in)
  Parameter& s = register_parameter("s", {32}, "xavier_uniform");
  Parameter& c = register_parameter("c", {1, 32}, "uniform");
  Parameter& w3 = register_parameter("w3", {32, 8}, "xavier_uniform");
  Primitive& flatten = register_primitive("flatten", "Flatten");
  Primitive& matmul1 = register_primitive("matmul1", "MatMul");
  Primitive& bias1 = register_primitive("bias1", "BiasAdd");
  Primitive& relu1 = register_primitive("relu1", "ReLU");
  Primitive& matmul2 = register_primitive("matmul2", "MatMul", {{"transpose_b", int64_t{1}}});
  Primitive& mul = register_primitive("mul", "Mul");
  Primitive& add = register_primitive("add", "Add");
  Primitive& sub = register_primitive("sub", "Sub");
  Primitive& relu2 = register_primitive("relu2", "ReLU");
  Primitive& matmul3 = register_primitive("matmul3", "MatMul");

  Value construct(GraphBuilder& b, Value x) override {
    x = flatten(b, {x});
    const Value h = relu1(b, {bias1(b, {matmul1(b, {x, param(b, w1)}), param(b, b1)})});
    Value y = mul(b, {matmul2(b, {h, param(b, w2)}), param(b, s)});
    y = relu2(b, {sub(b, {add(b, {y, h}), param(b, c)})});
    return matmul3(b, {y, param(b, w3)});
  }
};

// MatMul, then MatMul with transpose_a and transpose_b (weights first, giving the activations
// transposed), then MatMul with transpose_a; MSELoss against (16, 8) targets. x is (16, 16).
class TransposedNet : public nn::Cell {
 public:
  static constexpr NetKind kKind = NetKind::kTransposed;
  Parameter& w1 = register_parameter("w1", {16, 32}, "xavier_uniform");
  Parameter& w2 = register_parameter("w2", {32, 24}, "xavier_uniform");
  Parameter& w3 = register_parameter("w3", {24, 8}, "xavier_uniform");
  Primitive& matmul1 = register_primitive("matmul1", "MatMul");
  Primitive& relu1 = register_primitive("relu1", "ReLU");
  Primitive& matmul_tt = register_primitive("matmul_tt", "MatMul", {{"transpose_a", int64_t{1}}, {"transpose_b", int64_t{1}}});
  Primitive& relu2 = register_primitive("relu2", "ReLU");
  Primitive& matmul_ta = register_primitive("matmul_ta", "MatMul", {{"transpose_a", int64_t{1}}});

  Value construct(GraphBuilder& b, Value x) override {
    const Value h = relu1(b, {matmul1(b, {x, param(b, w1)})});     // (16, 32)
    const Value z = relu2(b, {matmul_tt(b, {param(b, w2), h})});   // (24, 16)
    return matmul_ta(b, {z, param(b, w3)});                        // (16, 8)
  }
};

// MatMul, Reshape to (16, 4, 8), ReLU, ReduceSum over the last dim, MatMul, ReduceMean with
// keep_dims added back (broadcast); the loss is mean((pred - target)^2) written with Sub, Mul
// and ReduceMean. x is (16, 16), targets (16, 4).
class ReshapeReduceNet : public nn::Cell {
 public:
  static constexpr NetKind kKind = NetKind::kReshapeReduce;
  Parameter& w1 = register_parameter("w1", {16, 32}, "xavier_uniform");
  Parameter& w2 = register_parameter("w2", {4, 4}, "xavier_uniform");
  Primitive& matmul1 = register_primitive("matmul1", "MatMul");
  Primitive& reshape = register_primitive("reshape", "Reshape", {{"shape", Shape{kBatch, 4, 8}}});
  Primitive& relu = register_primitive("relu", "ReLU");
  Primitive& reduce_sum = register_primitive("reduce_sum", "ReduceSum", {{"axis", std::vector<int64_t>{2}}});
  Primitive& matmul2 = register_primitive("matmul2", "MatMul");
  Primitive& reduce_mean =
      register_primitive("reduce_mean", "ReduceMean", {{"axis", std::vector<int64_t>{1}}, {"keep_dims", int64_t{1}}});
  Primitive& add = register_primitive("add", "Add");

  Value construct(GraphBuilder& b, Value x) override {
    const Value r = relu(b, {reshape(b, {matmul1(b, {x, param(b, w1)})})});
    const Value p = matmul2(b, {reduce_sum(b, {r}), param(b, w2)});
    return add(b, {p, reduce_mean(b, {p})});
  }
};

// mean((pred - target)^2) from Sub, Mul and ReduceMean: ops "Sub", "Mul", "ReduceMean".
class SquaredErrorMean : public nn::LossFn {
 public:
  Value operator()(GraphBuilder& b, Value pred, Value target) const override {
    const Value d = b.sub(pred, target);
    return b.reduce_mean(b.mul(d, d));
  }
};

// Seed 001's network on small shapes: Flatten, matmul1, relu1, matmul2, relu2, matmul3 without
// biases, softmax cross entropy on 10 classes. x is (16, 8, 8).
class Seed001Net : public nn::Cell {
 public:
  static constexpr NetKind kKind = NetKind::kSeed001;
  Parameter& fc1_weight = register_parameter("fc1_weight", {64, 32}, "normal");
  Parameter& fc2_weight = register_parameter("fc2_weight", {32, 32}, "normal");
  Parameter& fc3_weight = register_parameter("fc3_weight", {32, 10}, "normal");
  Primitive& flatten = register_primitive("flatten", "Flatten");
  Primitive& matmul1 = register_primitive("matmul1", "MatMul");
  Primitive& relu1 = register_primitive("relu1", "ReLU");
  Primitive& matmul2 = register_primitive("matmul2", "MatMul");
  Primitive& relu2 = register_primitive("relu2", "ReLU");
  Primitive& matmul3 = register_primitive("matmul3", "MatMul");

  Value construct(GraphBuilder& b, Value x) override {
    x = flatten(b, {x});
    x = relu1(b, {matmul1(b, {x, param(b, fc1_weight)})});
    x = relu2(b, {matmul2(b, {x, param(b, fc2_weight)})});
    return matmul3(b, {x, param(b, fc3_weight)});
  }
};

// Seed 002's Net(in 32, hidden 16, out 16): matmul, relu, matmul2; MSELoss and Momentum.
class Seed002Net : public nn::Cell {
 public:
  static constexpr NetKind kKind = NetKind::kSeed002;
  Parameter& weight = register_parameter("w", {32, 16}, "normal");
  Parameter& weight2 = register_parameter("w2", {16, 16}, "normal");
  Primitive& matmul = register_primitive("matmul", "MatMul");
  Primitive& relu = register_primitive("relu", "ReLU");
  Primitive& matmul2 = register_primitive("matmul2", "MatMul");

  Value construct(GraphBuilder& b, Value x) override {
    return matmul2(b, {relu(b, {matmul(b, {x, param(b, weight)})}), param(b, weight2)});
  }
};

inline std::shared_ptr<nn::LossFn> loss_for(NetKind kind) {
  switch (kind) {
    case NetKind::kClassifier:
    case NetKind::kSeed001:
      return std::make_shared<nn::CrossEntropyLoss>();
    case NetKind::kReshapeReduce:
      return std::make_shared<SquaredErrorMean>();
    default:
      return std::make_shared<nn::MSELoss>();
  }
}

// kSteps batches of kBatch rows: normal features, and labels in [0, classes) or normal targets.
inline dataset::Dataset data_for(NetKind kind) {
  Shape x, y;
  int32_t classes = 0;
  switch (kind) {
    case NetKind::kClassifier: x = {4, 4}, classes = 8; break;
    case NetKind::kSeed001: x = {8, 8}, classes = 10; break;
    case NetKind::kTransposed: x = {16}, y = {8}; break;
    case NetKind::kReshapeReduce: x = {16}, y = {4}; break;
    case NetKind::kSeed002: x = {32}, y = {16}; break;
  }
  return dataset::Dataset::generator(
             [x, y, classes](int64_t i) {
               Tensor a(x);
               for (int64_t k = 0; k < a.numel(); ++k) a.f32()[k] = normal_at(kSeed, 0, uint64_t(i * a.numel() + k));
               if (classes > 0) {
                 const auto label = static_cast<int32_t>(uniform_at(kSeed, 1, uint64_t(i)) * classes);
                 return std::vector<Tensor>{a, Tensor::from_vector({}, std::vector<int32_t>{label})};
               }
               Tensor t(y);
               for (int64_t k = 0; k < t.numel(); ++k) t.f32()[k] = normal_at(kSeed, 2, uint64_t(i * t.numel() + k));
               return std::vector<Tensor>{a, t};
             },
             kSteps * kBatch, {"data", "label"})
      .batch(kBatch);
}

// One equivalence case: a network with strategies on some of its ops, and its optimizer.
struct Case {
  std::string name;
  NetKind kind;
  std::function<std::unique_ptr<nn::Cell>()> make;  // the network, strategies applied
  std::string optimizer = "sgd";                     // "sgd" or "momentum" (optimizer_for)
};

inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

template <class Net>
Case make_case(std::string name, std::function<void(Net&)> shard, std::string optimizer = "sgd") {
  return {std::move(name), Net::kKind,
          [shard] {
            auto net = std::make_unique<Net>();
            shard(*net);
            return net;
          },
          std::move(optimizer)};
}

// SGD at 0.1 (0.01 for the reshape-reduce network, whose sums of 8 grow fast), or seed 002's
// Momentum(0.2, 0.1).
inline std::shared_ptr<nn::Optimizer> optimizer_for(const Case& c, const ParameterList& params) {
  if (c.optimizer == "momentum") return std::make_shared<nn::Momentum>(params, 0.2f, 0.1f);
  return std::make_shared<nn::SGD>(params, c.kind == NetKind::kReshapeReduce ? 0.01f : 0.1f);
}

struct TrainRun {
  std::vector<std::vector<float>> losses;               // [rank][step]
  std::vector<std::vector<Parameter>> params;           // [rank]: after the last step
  std::vector<std::string> sharding;                    // [rank]: the global graph's sharding, printed
};

// Model::train for kSteps steps on `devices` ranks (1: stand-alone, no ranks) in the mode of
// `context` (semi-auto by default; auto parallel for the strategy searches' tests).
inline TrainRun train(const Case& c, int devices,
                      const AutoParallelContext& context = {.parallel_mode = ParallelMode::kSemiAutoParallel}) {
  TrainRun run;
  run.losses.resize(devices);
  run.params.resize(devices);
  run.sharding.resize(devices);
  auto body = [&](int rank) {
    set_seed(kSeed);
    std::unique_ptr<nn::Cell> net = c.make();
    Model model(*net, loss_for(c.kind), optimizer_for(c, net->trainable_params()));
    auto log = std::make_shared<traintest::StepLog>(ParameterList{});
    model.train(1, data_for(c.kind), {log});
    run.losses[rank] = log->losses;
    for (Parameter& p : net->trainable_params()) run.params[rank].push_back(p);
    if (SemiAutoProgram* sp = model.semi_auto_program()) run.sharding[rank] = sp->sharding.str(sp->global);
  };
  if (devices == 1) {
    body(0);
    return run;
  }
  traintest::ParallelContextGuard ctx(context);
  traintest::run_world(devices, traintest::Wire::kInproc, body);
  return run;
}

// The 1-device run of a network kind and optimizer (strategies do not matter there).
inline const TrainRun& one_device(const Case& c) {
  static std::mutex mu;
  static std::map<std::pair<NetKind, std::string>, TrainRun> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(c.kind, c.optimizer);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, train(c, 1)).first;
  return it->second;
}

// Every rank's loss at every step within 1e-5 relative of the 1-device run's, and every rank's
// parameter blocks equal to the blocks of the 1-device parameters after the last step.
inline void expect_equivalent(const TrainRun& got, const TrainRun& ref) {
  ASSERT_EQ(ref.losses[0].size(), static_cast<size_t>(kSteps));
  for (size_t r = 0; r < got.losses.size(); ++r) {
    ASSERT_EQ(got.losses[r].size(), ref.losses[0].size()) << "rank " << r;
    for (size_t s = 0; s < ref.losses[0].size(); ++s)
      ASSERT_NEAR(got.losses[r][s], ref.losses[0][s], 1e-5 * std::abs(ref.losses[0][s]) + 1e-7)
          << "rank " << r << " step " << s + 1 << "\n" << got.sharding[0];
  }
  for (size_t r = 0; r < got.params.size(); ++r)
    for (size_t i = 0; i < ref.params[0].size(); ++i) {
      const Parameter& p = got.params[r][i];
      const Tensor& whole = ref.params[0][i].value();
      const Tensor& block = p.value();
      ASSERT_TRUE(p.sharded()) << p.name();
      float worst = 0;
      int64_t at = 0;
      // The block at p.offset() of the 1-device parameter, walked element by element.
      for (int64_t k = 0; k < block.numel(); ++k) {
        int64_t rest = k, flat = 0, stride = 1;
        std::vector<int64_t> idx(block.rank());
        for (int d = block.rank() - 1; d >= 0; --d) {
          idx[d] = rest % block.dim(d) + p.offset()[d];
          rest /= block.dim(d);
        }
        for (int d = block.rank() - 1; d >= 0; --d) {
          flat += idx[d] * stride;
          stride *= whole.dim(d);
        }
        const float diff = std::abs(block.f32()[k] - whole.f32()[flat]);
        if (diff > worst) worst = diff, at = k;
      }
      ASSERT_LT(worst, 2e-5f) << "rank " << r << " parameter " << p.name() << " element " << at;
    }
}

}  // namespace sf::paralleltest
