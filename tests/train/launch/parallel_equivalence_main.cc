// Data parallel (seed 004) and manual parallel (seed 000) equal 1 device with one process per
// rank, under a real launcher (ctest runs it under mpirun -np 2 and 4, the mpi transport):
//   parallel_equivalence data|manual
// Every rank trains the seed MLP for 50 steps with Model::train — data parallel: on its shard
// of the global batch; manual: fed the whole batch, slicing its rows and AllReducing the loss
// in the graph (hybrid-parallel mode) — then the ranks AllGather their per-step losses and
// parameter fingerprints, and every rank checks them against a 1-device run it makes itself
// afterwards (stand-alone mode, whole global batch): the mean of the ranks' losses within
// 1e-5 relative at every step (manual: every rank's own loss), and the fingerprints equal on
// all ranks after every step. Exits non-zero naming the step and rank on the first mismatch.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <shardflow/comm/all_gather.h>
#include <shardflow/comm/bootstrap/init.h>
#include <shardflow/comm/rank_context.h>
#include "tests/train/manual_parallel_net.h"
#include "tests/train/parallel_fixture.h"
#include <shardflow/train/mlp.h>
#include <shardflow/train/model.h>

namespace sf {
namespace {

constexpr int64_t kSteps = 50;
constexpr int64_t kGlobalBatch = 32;
constexpr float kLr = 0.05f;
constexpr uint64_t kSeed = 7;

std::shared_ptr<traintest::StepLog> fit(nn::Cell& net, std::shared_ptr<nn::LossFn> loss, const dataset::Dataset& data) {
  Model model(net, std::move(loss), std::make_shared<nn::SGD>(net.trainable_params(), kLr));
  auto log = std::make_shared<traintest::StepLog>(net.trainable_params());
  model.train(1, data, {log});
  if (static_cast<int64_t>(log->losses.size()) != kSteps)
    throw std::runtime_error(fmt::format("{} steps logged, expected {}", log->losses.size(), kSteps));
  return log;
}

// Data parallel: this rank's shard, batch kGlobalBatch / n (n = 1: the 1-device run).
std::shared_ptr<traintest::StepLog> train_data(int n, int rank) {
  set_seed(kSeed);
  nn::Mlp net(784, {512, 512}, 10);
  return fit(net, std::make_shared<nn::CrossEntropyLoss>(), traintest::image_rows(kSteps * kGlobalBatch, n, rank).batch(kGlobalBatch / n));
}

// Manual parallel: the whole batch, rows sliced by rank in the network.
std::shared_ptr<traintest::StepLog> train_manual(int n, int rank) {
  set_seed(kSeed);
  const int64_t shard = kGlobalBatch / n;
  traintest::SlicedMlp net(rank * shard, rank * shard + shard);
  return fit(net, std::make_shared<traintest::ReduceLoss>(rank * shard, rank * shard + shard, n),
             traintest::image_rows(kSteps * kGlobalBatch).batch(kGlobalBatch));
}

void check(bool manual) {
  const int n = comm::get_group_size(), me = comm::get_rank();
  if (kGlobalBatch % n != 0) throw std::runtime_error(fmt::format("{} ranks do not divide batch {}", n, kGlobalBatch));
  std::shared_ptr<traintest::StepLog> mine;
  {
    traintest::ParallelContextGuard ctx(
        {.parallel_mode = manual ? ParallelMode::kHybridParallel : ParallelMode::kDataParallel, .gradients_mean = true});
    mine = manual ? train_manual(n, me) : train_data(n, me);
  }
  // Row r of each gathered tensor is rank r's.
  Tensor losses = Tensor::from_vector({1, kSteps}, mine->losses);
  Tensor prints({1, kSteps * 2}, DType::kI32);
  for (int64_t s = 0; s < kSteps; ++s) {
    const uint64_t p = mine->prints[s];
    prints.i32()[2 * s] = static_cast<int32_t>(p & 0xffffffffu);
    prints.i32()[2 * s + 1] = static_cast<int32_t>(p >> 32);
  }
  const Tensor all_losses = comm::all_gather(losses, {});
  const Tensor all_prints = comm::all_gather(prints, {});
  const std::shared_ptr<traintest::StepLog> ref = train_data(1, 0);  // stand-alone: no collectives
  double mean = 0;
  for (int64_t s = 0; s < kSteps; ++s) {
    mean = 0;
    for (int r = 0; r < n; ++r) mean += all_losses.f32()[r * kSteps + s];
    mean /= n;
    const double want = ref->losses[s];
    for (int r = 0; manual && r < n; ++r)  // the loss is AllReduced: every rank's is the mean
      if (std::abs(all_losses.f32()[r * kSteps + s] - want) > 1e-5 * std::abs(want))
        throw std::runtime_error(fmt::format("step {}: loss of rank {} {:.9g}, 1 device {:.9g}", s + 1, r,
                                             all_losses.f32()[r * kSteps + s], want));
    if (std::abs(mean - want) > 1e-5 * std::abs(want))
      throw std::runtime_error(fmt::format("step {}: mean loss of {} ranks {:.9g}, 1 device {:.9g}", s + 1, n, mean, want));
    for (int r = 1; r < n; ++r)
      for (int k = 0; k < 2; ++k)
        if (all_prints.i32()[r * kSteps * 2 + 2 * s + k] != all_prints.i32()[2 * s + k])
          throw std::runtime_error(fmt::format("step {}: parameters of rank {} differ from rank 0", s + 1, r));
  }
  std::printf("%s parallel, rank %d of %d: %lld steps, mean loss equals 1 device (last %.9g vs %.9g), parameters equal on all ranks\n",
              manual ? "manual" : "data", me, n, static_cast<long long>(kSteps), mean, static_cast<double>(ref->losses[kSteps - 1]));
}

}  // namespace
}  // namespace sf

int main(int argc, char** argv) {
  try {
    sf::comm::init(argc, argv);
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode != "data" && mode != "manual") throw std::invalid_argument("usage: parallel_equivalence data|manual");
    sf::comm::run_ranks([&] { sf::check(mode == "manual"); });
    sf::comm::release();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parallel equivalence FAILED: %s\n", e.what());
    return 1;
  }
}
