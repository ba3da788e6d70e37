// Test support for distributed checkpoints (train/checkpoint/): a fresh directory per test,
// seeded global tensors whose every element has its own bit pattern, each rank's block of
// them under a layout (by the in-memory reshard, the loader's own oracle), saving on M virtual
// ranks, and exact error messages.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <shardflow/core/error.h>
#include <shardflow/core/rng.h>
#include <shardflow/parallel/reshard.h>
#include <shardflow/train/checkpoint/save.h>
#include "tests/train/parallel_fixture.h"

namespace sf::ckpttest {

namespace fs = std::filesystem;

// A fresh directory under the test temp dir, named for the running test.
inline std::string fresh_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir =
      fs::path(::testing::TempDir()) / (std::string("sf_ckptdir_") + info->test_suite_name() + "_" + info->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// A tensor of `shape` whose elements are distinct seeded values.
inline Tensor seeded(const Shape& shape, DType dtype, uint64_t seed) {
  Tensor t = Tensor::empty(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::kF32) t.f32()[i] = normal_at(seed, 3, static_cast<uint64_t>(i));
    else t.i32()[i] = static_cast<int32_t>(uniform_at(seed, 4, static_cast<uint64_t>(i)) * 2e9) - 1000000000;
  }
  return t;
}

// The whole-tensor layout (one device).
inline TensorLayout whole_layout(const Shape& shape) {
  return TensorLayout::replicated(DeviceMatrix({1}), static_cast<int>(shape.size()));
}

// Every rank's block of `global` under `layout`.
inline std::vector<Tensor> blocks_of(const Tensor& global, const TensorLayout& layout) {
  return reshard({global}, global.shape(), whole_layout(global.shape()), layout);
}

// One tensor of a test checkpoint: its global value and the layout it is saved under.
struct Saved {
  std::string name;
  Tensor global;
  TensorLayout layout;
};

// Saves `tensors` on layout-many virtual ranks (the layouts' device counts must equal `ranks`).
inline void save_on_ranks(const std::string& dir, int ranks, const std::vector<Saved>& tensors,
                          ckpt::SaveOptions options) {
  std::vector<std::vector<Tensor>> blocks;
  for (const Saved& s : tensors) blocks.push_back(blocks_of(s.global, s.layout));
  traintest::run_world(ranks, traintest::Wire::kInproc, [&](int rank) {
    std::vector<ckpt::ShardedTensor> mine;
    for (size_t i = 0; i < tensors.size(); ++i)
      mine.push_back({tensors[i].name, blocks[i][static_cast<size_t>(rank)], tensors[i].global.shape(),
                      tensors[i].layout, rank});
    ckpt::SaveOptions o = options;
    o.rank_state = {{"rank", rank}};
    ckpt::save_checkpoint_dir(dir, mine, o);
  });
}

// The message `fn` throws as an E, or a failure naming what happened instead.
template <class E>
std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception type: ") + e.what();
  }
  return "nothing thrown";
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace sf::ckpttest
