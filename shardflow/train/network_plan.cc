#include <shardflow/train/network_plan.h>

#include <fmt/format.h>

#include <shardflow/parallel/auto_parallel.h>
#include <shardflow/parallel/context.h>
#include <shardflow/parallel/strategy_file.h>

namespace sf {

NetworkPlan plan_network(nn::Cell& net, const LossBuilder& loss, const std::vector<Shape>& shapes,
                         const std::vector<DType>& dtypes, int64_t devices) {
  NetworkPlan plan;
  net.trainable_params();  // the parameters exist before the graph names them
  GraphBuilder b(plan.global);
  std::vector<Value> columns;
  // Named as SemiAutoStep names them, so the plan is the one training would make.
  for (size_t c = 0; c < shapes.size(); ++c) columns.push_back(b.input(fmt::format("input{}", c), shapes[c], dtypes[c]));
  plan.loss = loss(b, columns).id;
  const AutoParallelContext context = get_auto_parallel_context();
  StrategyTable table = net.strategies();
  if (context.parallel_mode == ParallelMode::kAutoParallel) {
    plan.search = search_strategies(plan.global, {plan.loss}, table, devices, context);
    table = plan.search.table;
  }
  plan.dry_run = sf::dry_run(plan.global, {plan.loss}, table, devices);
  return plan;
}

std::string NetworkPlan::str(bool explain) const {
  std::string out;
  if (explain && !search.mode.empty()) out += search.explain() + "\n";
  // Each op's strategy, not GraphSharding::str: on thousands of ranks its group lists run to
  // megabytes.
  out += fmt::format("dry run on {} ranks, planned in {:.3f} s; ranks 0..{} each (alike), per step:\n{}",
                     dry_run.devices, dry_run.seconds, dry_run.devices - 1, dry_run.per_rank.str());
  for (const auto& [op, strategy] : strategies_of(global, dry_run.sharding))
    out += fmt::format("{}: {}\n", op, strategy.str());
  return out;
}

}  // namespace sf
