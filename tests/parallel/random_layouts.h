// Random device matrices and tensor layouts for the resharding property tests (in memory,
// tests/parallel/reshard_test.cc, and through checkpoint files,
// tests/train/checkpoint_dir_property_test.cc): seeded, so a failing case reproduces.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <shardflow/parallel/device_matrix.h>
#include <shardflow/parallel/tensor_layout.h>

namespace sf::layouttest {

// `n` as a product of random factors (some of them 1), in random order: a device matrix.
inline std::vector<int64_t> random_mesh(int64_t n, std::mt19937& rng) {
  std::vector<int64_t> dims;
  for (int64_t left = n; left > 1;) {
    std::vector<int64_t> divisors;
    for (int64_t d = 2; d <= left; ++d)
      if (left % d == 0) divisors.push_back(d);
    const int64_t d = divisors[rng() % divisors.size()];
    dims.push_back(d);
    left /= d;
  }
  if (dims.empty() || rng() % 4 == 0) dims.push_back(1);
  std::shuffle(dims.begin(), dims.end(), rng);
  return dims;
}

// Each axis of `mesh` on a random dim (or none: replicated along it), axes of a dim in random order.
inline TensorLayout random_layout(const DeviceMatrix& mesh, int dims, std::mt19937& rng) {
  TensorLayout::TensorMap map(static_cast<size_t>(dims));
  std::vector<int> axes(static_cast<size_t>(mesh.axes()));
  std::iota(axes.begin(), axes.end(), 0);
  std::shuffle(axes.begin(), axes.end(), rng);
  for (int a : axes) {
    const int d = static_cast<int>(rng() % static_cast<uint32_t>(dims + 1)) - 1;
    if (d >= 0) map[static_cast<size_t>(d)].push_back(a);
  }
  return TensorLayout(mesh, map);
}

}  // namespace sf::layouttest
