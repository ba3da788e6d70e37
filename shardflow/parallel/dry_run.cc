#include <shardflow/parallel/dry_run.h>

#include <chrono>

#include <fmt/format.h>

#include <shardflow/parallel/sharding/local_graph.h>

namespace sf {

DryRun dry_run(const Graph& g, const std::vector<int>& outputs, const StrategyTable& table, int64_t devices) {
  const auto start = std::chrono::steady_clock::now();
  DryRun d;
  d.devices = devices;
  d.sharding = shard_graph(g, outputs, table, devices);
  d.local_ops = build_local_graph(g, d.sharding, 0).graph.size();
  build_local_graph(g, d.sharding, static_cast<int>(devices - 1));
  d.per_rank = estimate_step(g, d.sharding);
  d.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return d;
}

std::string DryRun::str(const Graph& g) const {
  return fmt::format("dry run on {} ranks, planned in {:.3f} s; ranks 0..{} each (alike), per step:\n{}\n{}", devices,
                     seconds, devices - 1, per_rank.str(), sharding.str(g));
}

}  // namespace sf
