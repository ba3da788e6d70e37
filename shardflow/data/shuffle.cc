#include <shardflow/data/shuffle.h>

#include <numeric>
#include <utility>

#include <shardflow/core/rng.h>

namespace sf::dataset {

namespace {

// Uniform integer in [0, bound) from 64 random bits by multiply-shift (Lemire); the bias is
// below bound / 2^64, far under anything a dataset of < 2^40 rows could show.
uint64_t below(uint64_t bits, uint64_t bound) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * bound) >> 64);
}

}  // namespace

std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  const auto e = static_cast<uint64_t>(epoch);
  const std::array<uint32_t, 2> key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  for (int64_t i = n - 1; i > 0; --i) {
    const auto step = static_cast<uint64_t>(i);
    auto r = philox4x32({static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32), static_cast<uint32_t>(e),
                         static_cast<uint32_t>(e >> 32)},
                        key);
    const uint64_t bits = (uint64_t{r[0]} << 32) | r[1];
    std::swap(order[i], order[below(bits, step + 1)]);
  }
  return order;
}

}  // namespace sf::dataset
