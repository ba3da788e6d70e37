#include "tools/sfckpt/convert.h"

#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include <shardflow/comm/bootstrap/init.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/parallel/reshard.h>
#include <shardflow/train/checkpoint/reader.h>
#include <shardflow/train/checkpoint/save.h>
#include <shardflow/train/checkpoint/step_dir.h>
#include "tools/sfckpt/strategy_placement.h"
#include "tools/sfckpt/usage_error.h"

namespace sf::sfckpt {
namespace {

// The largest job convert writes for: one thread per virtual rank.
constexpr int kMaxDevices = 1024;

// Rank `rank`'s block of `whole` under `layout`, copied by the runs the loader's planner gives.
Tensor block_of(const Tensor& whole, const TensorLayout& layout, int rank) {
  const Shape& shape = whole.shape();
  const TensorLayout one = TensorLayout::replicated(DeviceMatrix({1}), static_cast<int>(shape.size()));
  const TargetPlan plan = plan_reshard_target(shape, whole.dtype(), one, layout, rank);
  Tensor out = Tensor::empty(plan.box.shape(), whole.dtype());
  const auto* src = static_cast<const char*>(whole.raw());
  const ReadSourceBytes from_memory = [&](int, int64_t offset, int64_t bytes, void* dst) {
    std::memcpy(dst, src + offset, static_cast<size_t>(bytes));
  };
  copy_runs(plan, from_memory, out.raw(), static_cast<int64_t>(out.nbytes()));
  return out;
}

}  // namespace

ConvertReport convert(const std::string& src, const std::string& dst, int devices, const std::string& strategy_file) {
  if (devices < 1 || devices > kMaxDevices)
    throw UsageError(fmt::format("--devices {}: must be in [1, {}]", devices, kMaxDevices));
  ckpt::CheckpointReader reader(src);
  const ckpt::Manifest& m = reader.manifest();
  const std::string step_dir = (std::filesystem::path(dst) / ckpt::step_dir_name(m.step)).string();
  if (ckpt::is_committed(step_dir))
    throw UsageError(fmt::format("'{}' already holds a committed checkpoint; convert writes a new step", step_dir));
  // Every refusal of the strategy file comes before a byte is written.
  StrategyPlacement placement;
  if (!strategy_file.empty()) placement = place_by_strategy_file(strategy_file, m, devices);

  // Every tensor gathered whole once (verifying every block); each rank then cuts its blocks.
  std::vector<Tensor> whole;
  for (const ckpt::TensorEntry& t : m.tensors) whole.push_back(reader.read_whole(t.name));
  auto tensors_of = [&](int rank) {
    std::vector<ckpt::ShardedTensor> out;
    for (size_t i = 0; i < m.tensors.size(); ++i) {
      const std::string& name = m.tensors[i].name;
      auto placed = placement.layouts.find(name);
      if (placed == placement.layouts.end()) {
        out.push_back(ckpt::ShardedTensor::whole(name, whole[i]));  // written once, by rank 0
        continue;
      }
      out.push_back({name, block_of(whole[i], placed->second, rank), m.tensors[i].shape, placed->second, rank});
    }
    return out;
  };

  ckpt::SaveOptions options;
  options.step = m.step;
  options.parallel_mode = devices == 1 ? "stand_alone" : strategy_file.empty() ? "data_parallel" : "semi_auto_parallel";
  options.state = m.state;
  // A rank's state belongs to its rank of the saving job; kept only when the job keeps its size.
  const bool same_world = devices == m.world_size;
  if (devices == 1) {
    if (same_world) options.rank_state = m.ranks.at(0).state;
    ckpt::save_checkpoint_dir(dst, tensors_of(0), options);
  } else {
    comm::JobSpec spec;
    spec.source = comm::JobSpec::Source::kDevices;
    spec.backend = "inproc";
    spec.size = devices;
    spec.local_ranks = devices;
    comm::init(spec);
    comm::run_ranks([&] {
      ckpt::SaveOptions mine = options;
      const int rank = comm::get_rank();
      if (same_world) mine.rank_state = m.ranks.at(static_cast<size_t>(rank)).state;
      ckpt::save_checkpoint_dir(dst, tensors_of(rank), mine);
    });
    comm::release();
  }
  return {static_cast<int>(placement.layouts.size()), placement.whole};
}

}  // namespace sf::sfckpt
