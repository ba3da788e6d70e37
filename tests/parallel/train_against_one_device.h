// Test support for "train on N virtual ranks in semi-auto mode and compare with 1 device": a fresh Net trained
// with SGD on the same batches on every rank (strategies put on it by the case) or stand-alone, the 1-device run
// computed once, and the comparison that every rank's loss per step and every parameter block equal 1 device's.
// What differs between tests is a Training: how the net is made, its loss (through Model::train, or through
// value_and_grad when a batch has more columns than input and target), the learning rate, the batches, the
// tolerance, and what a test wants to see of each rank's semi-auto program.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <shardflow/data/dataset.h>
#include <shardflow/train/losses.h>
#include <shardflow/train/model.h>
#include <shardflow/train/optimizer.h>
#include <shardflow/train/semi_auto_step.h>
#include <shardflow/train/value_and_grad.h>
#include "tests/parallel/block_difference.h"
#include "tests/train/parallel_fixture.h"

namespace sf::paralleltest {

// The strategies a case puts on a fresh net before it trains.
template <class Net>
using Shard = std::function<void(Net&)>;

// sum((pred - target)^2) from Sub, Mul and ReduceSum. A sum rather than MSELoss's mean: a mean's gradients over a
// batch of small values barely move the parameters, and a wrong gradient could hide below the tolerance.
inline Value squared_error_sum(GraphBuilder& b, Value pred, Value target) {
  const Value d = b.sub(pred, target);
  return b.reduce_sum(b.mul(d, d));
}

class SquaredErrorSum : public nn::LossFn {
 public:
  Value operator()(GraphBuilder& b, Value pred, Value target) const override {
    return squared_error_sum(b, pred, target);
  }
};

// What a Training without an inspection notes of a rank's semi-auto program.
struct NothingSeen {};

// How to train a Net, the same on 1 device and on every rank.
template <class Net, class Seen = NothingSeen>
struct Training {
  uint64_t seed = 0;  // set before each rank makes its net, so that every rank starts from the same parameters
  int64_t steps = 0;  // the batches there are: the 1-device run must log this many losses
  float lr = 0;       // SGD's
  std::function<dataset::Dataset()> batches = {};
  // Model::train's loss, given the net (a loss may be one of the net's own primitives)...
  std::function<std::shared_ptr<nn::LossFn>(Net&)> loss = {};
  // ...or, where a batch has more columns than (input, target), the loss from all of them, trained through
  // value_and_grad and SGD step by step.
  std::function<Value(Net&, GraphBuilder&, const std::vector<Value>&)> forward = {};
  // Every parameter block within this of the 1-device block; and since equal blocks of parameters that a zero
  // gradient left untouched would prove nothing, every 1-device parameter must move by 100 times it.
  float tolerance = 1e-5f;
  // When above 0: the 1-device run's last loss must be below this share of its first (a run that learns nothing
  // could equal 1 device by chance).
  float learns_to = 0;
  std::function<std::unique_ptr<Net>()> make = [] { return std::make_unique<Net>(); };
  // What a test wants of each rank's semi-auto program (the ops' splits, the local graph's ops): rank r's lands in
  // the run's seen[r].
  std::function<Seen(const SemiAutoProgram&, int rank)> inspect = {};
};

// One run on 1 device or on every rank of a world.
template <class Seen = NothingSeen>
struct RanksRun {
  std::vector<std::vector<float>> losses;  // [rank][step]
  std::vector<ParameterList> params;       // [rank]: after the last step
  std::vector<Tensor> initial;             // rank 0: the trainable parameters before the first step
  std::string sharding;                    // rank 0's, printed
  std::vector<Seen> seen;                  // [rank]: Training::inspect's (default on 1 device)
};

// A Training, its 1-device run (computed once) and runs on N ranks to compare with it. Keep one per Training
// (a function's static), so that its 1-device run is shared by every case.
template <class Net, class Seen = NothingSeen>
class TrainAgainstOneDevice {
 public:
  using Run = RanksRun<Seen>;

  explicit TrainAgainstOneDevice(Training<Net, Seen> training) : t_(std::move(training)) {}

  // A fresh Net, its strategies from `shard`, trained on `devices` ranks in semi-auto mode (1: stand-alone).
  Run train(int devices, const Shard<Net>& shard = {}) const {
    Run run;
    run.losses.resize(devices);
    run.params.resize(devices);
    run.seen.resize(devices);
    auto body = [&](int rank) {
      set_seed(t_.seed);
      std::unique_ptr<Net> net = t_.make();
      if (shard) shard(*net);
      if (rank == 0) run.initial = traintest::clone_values(net->trainable_params());
      // Seen while the model or GradFunction that owns the program is still alive.
      auto note = [&](const SemiAutoProgram* sp) {
        if (sp == nullptr) return;
        if (rank == 0) run.sharding = sp->sharding.str(sp->global);
        if (t_.inspect) run.seen[rank] = t_.inspect(*sp, rank);
      };
      if (t_.forward) {
        train_step_by_step(*net, devices > 1, run.losses[rank], note);
      } else {
        train_with_model(*net, run.losses[rank], note);
      }
      run.params[rank] = net->get_parameters();
    };
    if (devices == 1) {
      body(0);
      return run;
    }
    traintest::ParallelContextGuard ctx({.parallel_mode = ParallelMode::kSemiAutoParallel});
    traintest::run_world(devices, traintest::Wire::kInproc, body);
    return run;
  }

  const Run& one_device() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!one_device_) one_device_ = std::make_unique<Run>(train(1));
    return *one_device_;
  }

  // Every rank's loss at every step within 1e-5 relative of 1 device's, and every parameter block within the
  // tolerance of the 1-device block.
  void expect_equals_one_device(const Run& got) const {
    const Run& ref = one_device();
    ASSERT_EQ(ref.losses[0].size(), static_cast<size_t>(t_.steps));
    for (float loss : ref.losses[0]) ASSERT_TRUE(std::isfinite(loss)) << "the 1-device run diverged";
    if (t_.learns_to > 0) {
      ASSERT_LT(ref.losses[0].back(), t_.learns_to * ref.losses[0].front()) << "the 1-device run did not learn";
    }
    for (size_t i = 0; i < ref.initial.size(); ++i) {
      ASSERT_GT(block_difference(ref.params[0][i], ref.initial[i]), 100 * t_.tolerance)
          << ref.params[0][i].name() << " did not move";
    }
    for (size_t r = 0; r < got.losses.size(); ++r) {
      ASSERT_EQ(got.losses[r].size(), ref.losses[0].size()) << "rank " << r;
      for (size_t s = 0; s < ref.losses[0].size(); ++s) {
        ASSERT_NEAR(got.losses[r][s], ref.losses[0][s], 1e-5 * std::abs(ref.losses[0][s]))
            << "rank " << r << " step " << s + 1 << "\n"
            << got.sharding;
      }
      ASSERT_EQ(got.params[r].size(), ref.params[0].size());
      for (size_t i = 0; i < ref.params[0].size(); ++i) {
        const Parameter& p = got.params[r][i];
        ASSERT_EQ(p.name(), ref.params[0][i].name());
        EXPECT_LT(block_difference(p, ref.params[0][i].value()), t_.tolerance)
            << "rank " << r << " parameter " << p.name();
      }
    }
  }

 private:
  using Note = std::function<void(const SemiAutoProgram*)>;

  // Model::train for one epoch; `note` sees its semi-auto program (null stand-alone).
  void train_with_model(Net& net, std::vector<float>& losses, const Note& note) const {
    Model model(net, t_.loss(net), std::make_shared<nn::SGD>(net.trainable_params(), t_.lr));
    auto log = std::make_shared<traintest::StepLog>(ParameterList{});
    model.train(1, t_.batches(), {log});
    losses = log->losses;
    note(model.semi_auto_program());
  }

  // value_and_grad (semi-auto when `sharded`) and an SGD step per batch; `note` sees its semi-auto program.
  void train_step_by_step(Net& net, bool sharded, std::vector<float>& losses, const Note& note) const {
    nn::SGD optimizer(net.trainable_params(), t_.lr);
    auto forward = [&](GraphBuilder& b, const std::vector<Value>& in) { return t_.forward(net, b, in); };
    GradFunction grad_fn = sharded ? value_and_grad(forward, net, net.trainable_params())
                                   : value_and_grad(forward, net.trainable_params());
    dataset::BatchIterator it = t_.batches().iterator(0);
    while (const std::vector<Tensor>* batch = it.next()) {
      auto [loss, grads] = grad_fn(*batch);
      optimizer.step(grads);
      losses.push_back(loss);
    }
    note(grad_fn.semi_auto_program());
  }

  Training<Net, Seen> t_;
  mutable std::mutex mu_;
  mutable std::unique_ptr<Run> one_device_;
};

// One equivalence case of a parameterised test: its name, and the run on N ranks compared with 1 device.
struct StrategyCase {
  std::string name;
  std::function<void()> check;
};

inline void PrintTo(const StrategyCase& c, std::ostream* os) { *os << c.name; }

}  // namespace sf::paralleltest
