// Test support: a small, deterministic classification dataset for training tests.
#pragma once

#include <cstdint>
#include <vector>

#include <shardflow/core/rng.h>
#include <shardflow/data/dataset.h>

namespace sf::traintest {

constexpr int64_t kIn = 4, kClasses = 3;

// Rows of random f32 features (kIn,) and an i32 label in [0, kClasses), the same for the same seed.
inline dataset::Dataset random_rows(int64_t n, uint64_t seed) {
  return dataset::Dataset::generator(
      [seed](int64_t i) {
        Tensor x({kIn});
        for (int64_t k = 0; k < kIn; ++k) x.f32()[k] = normal_at(seed, 0, static_cast<uint64_t>(i * kIn + k));
        const auto label = static_cast<int32_t>(uniform_at(seed, 1, static_cast<uint64_t>(i)) * kClasses);
        return std::vector<Tensor>{x, Tensor::from_vector({}, std::vector<int32_t>{label})};
      },
      n, {"data", "label"});
}

}  // namespace sf::traintest
