// Data parallel equals 1 device with one process per rank, under a real launcher (ctest runs
// it under mpirun -np 2 and 4, the mpi transport): every rank trains the seed MLP for 50 steps
// with Model::train in data-parallel mode on its shard of the global batch, then the ranks
// AllGather their per-step losses and parameter fingerprints, and every rank checks them
// against a 1-device run it makes itself afterwards (stand-alone mode, whole global batch):
// the mean of the ranks' losses within 1e-5 relative at every step, and the fingerprints equal
// on all ranks after every step. Exits non-zero naming the step and rank on the first mismatch.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <vector>

#include "comm/all_gather.h"
#include "comm/bootstrap/init.h"
#include "comm/rank_context.h"
#include "tests/train/parallel_fixture.h"
#include "train/mlp.h"
#include "train/model.h"

namespace sf {
namespace {

constexpr int64_t kSteps = 50;
constexpr int64_t kGlobalBatch = 32;
constexpr float kLr = 0.05f;
constexpr uint64_t kSeed = 7;

// Trains on `shards` shards (this rank's one) and returns the step log.
std::shared_ptr<traintest::StepLog> train(int shards, int shard_id) {
  set_seed(kSeed);
  nn::Mlp net(784, {512, 512}, 10);
  Model model(net, std::make_shared<nn::CrossEntropyLoss>(), std::make_shared<nn::SGD>(net.trainable_params(), kLr));
  auto log = std::make_shared<traintest::StepLog>(net.trainable_params());
  model.train(1, traintest::image_rows(kSteps * kGlobalBatch, shards, shard_id).batch(kGlobalBatch / shards), {log});
  if (static_cast<int64_t>(log->losses.size()) != kSteps)
    throw std::runtime_error(fmt::format("{} steps logged, expected {}", log->losses.size(), kSteps));
  return log;
}

void check() {
  const int n = comm::get_group_size(), me = comm::get_rank();
  if (kGlobalBatch % n != 0) throw std::runtime_error(fmt::format("{} ranks do not divide batch {}", n, kGlobalBatch));
  std::shared_ptr<traintest::StepLog> mine;
  {
    traintest::ParallelContextGuard ctx({.parallel_mode = ParallelMode::kDataParallel, .gradients_mean = true});
    mine = train(n, me);
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
  const std::shared_ptr<traintest::StepLog> ref = train(1, 0);  // stand-alone: no collectives
  double mean = 0;
  for (int64_t s = 0; s < kSteps; ++s) {
    mean = 0;
    for (int r = 0; r < n; ++r) mean += all_losses.f32()[r * kSteps + s];
    mean /= n;
    const double want = ref->losses[s];
    if (std::abs(mean - want) > 1e-5 * std::abs(want))
      throw std::runtime_error(fmt::format("step {}: mean loss of {} ranks {:.9g}, 1 device {:.9g}", s + 1, n, mean, want));
    for (int r = 1; r < n; ++r)
      for (int k = 0; k < 2; ++k)
        if (all_prints.i32()[r * kSteps * 2 + 2 * s + k] != all_prints.i32()[2 * s + k])
          throw std::runtime_error(fmt::format("step {}: parameters of rank {} differ from rank 0", s + 1, r));
  }
  std::printf("rank %d of %d: %lld steps, mean loss equals 1 device (last %.9g vs %.9g), parameters equal on all ranks\n",
              me, n, static_cast<long long>(kSteps), mean, static_cast<double>(ref->losses[kSteps - 1]));
}

}  // namespace
}  // namespace sf

int main(int argc, char** argv) {
  try {
    sf::comm::init(argc, argv);
    sf::comm::run_ranks(sf::check);
    sf::comm::release();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "data parallel equivalence FAILED: %s\n", e.what());
    return 1;
  }
}
