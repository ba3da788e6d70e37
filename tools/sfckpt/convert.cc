#include "tools/sfckpt/convert.h"

#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include <shardflow/comm/bootstrap/init.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/train/checkpoint/reader.h>
#include <shardflow/train/checkpoint/save.h>
#include <shardflow/train/checkpoint/step_dir.h>
#include "tools/sfckpt/usage_error.h"

namespace sf::sfckpt {

// The largest job convert writes for: one thread per virtual rank.
constexpr int kMaxDevices = 1024;

void convert(const std::string& src, const std::string& dst, int devices) {
  if (devices < 1 || devices > kMaxDevices)
    throw UsageError(fmt::format("--devices {}: must be in [1, {}]", devices, kMaxDevices));
  ckpt::CheckpointReader reader(src);
  const ckpt::Manifest& m = reader.manifest();
  const std::string step_dir = (std::filesystem::path(dst) / ckpt::step_dir_name(m.step)).string();
  if (ckpt::is_committed(step_dir))
    throw UsageError(fmt::format("'{}' already holds a committed checkpoint; convert writes a new step", step_dir));

  // Every tensor gathered whole once (verifying every block), then held whole by every rank:
  // save_checkpoint_dir writes each once, from rank 0.
  std::vector<ckpt::ShardedTensor> whole;
  for (const ckpt::TensorEntry& t : m.tensors) whole.push_back(ckpt::ShardedTensor::whole(t.name, reader.read_whole(t.name)));

  ckpt::SaveOptions options;
  options.step = m.step;
  options.parallel_mode = devices == 1 ? "stand_alone" : "data_parallel";
  options.state = m.state;
  // A rank's state belongs to its rank of the saving job; kept only when the job keeps its size.
  const bool same_world = devices == m.world_size;
  if (devices == 1) {
    if (same_world) options.rank_state = m.ranks.at(0).state;
    ckpt::save_checkpoint_dir(dst, whole, options);
    return;
  }
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
    ckpt::save_checkpoint_dir(dst, whole, mine);
  });
  comm::release();
}

}  // namespace sf::sfckpt
