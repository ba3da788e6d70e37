// The row order of one epoch of a shuffled dataset.
//
// A Fisher-Yates shuffle driven by Philox (core/rng.h) addressed by (seed, epoch, step), so
// the permutation depends on nothing but (n, seed, epoch): it is the same on every platform,
// every rank and every run, and epoch e+1 does not depend on having drawn epoch e.
// Shards have equal sizes (see sharding.h), so ranks sharing a seed apply the same
// permutation to their local rows and stay aligned batch for batch.
// Stateless and thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace sf::dataset {

// A permutation of 0..n-1 for `epoch` of a shuffle seeded by `seed`.
std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace sf::dataset
