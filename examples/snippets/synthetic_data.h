// A tiny labelled data set for the snippet programs: rows of 4 features whose class (0, 1 or 2)
// follows from the features, so a few steps of training lower the loss. Small enough that
// every snippet runs in a second, with no dataset on disk.
#pragma once

#include <shardflow/shardflow.h>

namespace snippets {

// Row i: features ((i * 7 + k) % 5) for k = 0..3, label i % 3 (as an i32 scalar).
inline std::vector<sf::Tensor> synthetic_row(int64_t i) {
  sf::Tensor x({4});
  for (int k = 0; k < 4; ++k) x.f32()[k] = static_cast<float>((i * 7 + k) % 5);
  return {x, sf::Tensor::from_vector({}, std::vector<int32_t>{static_cast<int32_t>(i % 3)})};
}

// `rows` rows in batches of `batch`.
inline sf::dataset::Dataset synthetic_dataset(int64_t rows, int64_t batch) {
  return sf::dataset::Dataset::generator(synthetic_row, rows, {"x", "y"}).batch(batch);
}

}  // namespace snippets
