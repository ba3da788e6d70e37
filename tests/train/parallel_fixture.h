// Test support for data- and manual-parallel training: N ranks in this process, each on its
// own thread bound to its rank (as sf::comm::run_ranks does after init(--devices N)) over inproc
// or zmq endpoints; image-like rows sharded as the ranks read them; the parallel context set for
// one test; and a callback recording each step's loss and a fingerprint of the parameters.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/comm/inproc/transport.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/comm/zmq/transport.h>
#include <shardflow/core/rng.h>
#include <shardflow/data/dataset.h>
#include <shardflow/parallel/context.h>
#include "tests/comm/rank_threads.h"
#include <shardflow/train/callback.h>
#include <shardflow/train/parameter.h>

namespace sf::traintest {

enum class Wire { kInproc, kZmq };
inline const char* wire_name(Wire w) { return w == Wire::kInproc ? "inproc" : "zmq"; }

// Runs fn(rank) on n threads, each bound to its rank of a fresh world; rethrows the first failure
// (a failing rank closes its endpoint, as sf::comm::run_ranks does).
inline void run_world(int n, Wire wire, const std::function<void(int rank)>& fn) {
  auto world = wire == Wire::kInproc ? comm::make_inproc_world(n) : comm::make_zmq_world(n);
  commtest::run_ranks(n, [&](int rank) {
    comm::RankBinding bind(std::make_shared<comm::RankContext>(world[rank], rank));
    try {
      fn(rank);
    } catch (...) {
      world[rank]->close();  // its peers fail at once instead of waiting for their timeout
      throw;
    }
  });
}

// `rows` rows of (784,) f32 features and an i32 label in [0, 10), sharded as in data/sharding.h.
inline dataset::Dataset image_rows(int64_t rows, int num_shards = 1, int shard_id = 0, uint64_t seed = 5) {
  return dataset::Dataset::generator(
      [seed](int64_t i) {
        Tensor x({784});
        for (int64_t k = 0; k < 784; ++k) x.f32()[k] = normal_at(seed, 0, static_cast<uint64_t>(i * 784 + k));
        const auto label = static_cast<int32_t>(uniform_at(seed, 1, static_cast<uint64_t>(i)) * 10);
        return std::vector<Tensor>{x, Tensor::from_vector({}, std::vector<int32_t>{label})};
      },
      rows, {"image", "label"}, num_shards, shard_id);
}

// Sets the parallel context for the lifetime of the object, then resets it.
struct ParallelContextGuard {
  explicit ParallelContextGuard(const AutoParallelContext& c) { set_auto_parallel_context(c); }
  ~ParallelContextGuard() { reset_auto_parallel_context(); }
};

// FNV-1a over every parameter's bytes: equal on two ranks iff their parameters are bitwise equal
// (up to a hash collision).
inline uint64_t fingerprint(const ParameterList& params) {
  uint64_t h = 1469598103934665603ull;
  for (const Parameter& p : params) {
    const auto* b = static_cast<const unsigned char*>(p.value().raw());
    for (size_t i = 0; i < p.value().nbytes(); ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
  return h;
}

// Records each step's loss and the parameters' fingerprint after it.
struct StepLog : Callback {
  explicit StepLog(ParameterList p) : params(std::move(p)) {}
  ParameterList params;
  std::vector<float> losses;
  std::vector<uint64_t> prints;
  void on_step_end(const RunContext& ctx) override {
    losses.push_back(ctx.loss);
    prints.push_back(fingerprint(params));
  }
};

inline std::vector<Tensor> clone_values(const ParameterList& params) {
  std::vector<Tensor> out;
  for (const Parameter& p : params) out.push_back(p.value().clone());
  return out;
}

}  // namespace sf::traintest
