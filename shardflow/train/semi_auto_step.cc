#include <shardflow/train/semi_auto_step.h>

#include <algorithm>

#include <fmt/format.h>

#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/collective_builder.h>
#include <shardflow/parallel/auto_parallel.h>
#include <shardflow/parallel/parameter_places.h>
#include <shardflow/parallel/redistribution/layout_edits.h>
#include <shardflow/parallel/sharding/local_block.h>
#include <shardflow/parallel/strategy_file.h>
#include <shardflow/train/save_graphs.h>

namespace sf {

SemiAutoStep::SemiAutoStep(nn::Cell& net, LossBuilder loss, ParameterList params, ExecOptions opts)
    : net_(net), loss_(std::move(loss)), params_(std::move(params)), opts_(opts) {}

Program& SemiAutoStep::get(const std::vector<Tensor>& batch) {
  if (last_ && last_->program.accepts(batch)) return last_->program;
  std::string sig;
  for (const Tensor& t : batch) sig += t.describe() + ";";
  auto it = programs_.find(sig);
  if (it == programs_.end()) it = programs_.emplace(sig, build(batch)).first;
  last_ = it->second.get();
  return last_->program;
}

comm::Group SemiAutoStep::group(const std::string& name, const std::vector<int>& ranks) {
  auto it = groups_.find(name);
  if (it == groups_.end())
    it = groups_.emplace(name, comm::create_group(comm::current_rank().transport(), name, ranks)).first;
  return it->second;
}

namespace {
// The strategies the step starts from: the network's shard() calls, then the context's strategy
// checkpoint over them (the file wins over both kinds of call), checked against the graph here,
// before any group is made.
StrategyTable given_strategies(const nn::Cell& net, const AutoParallelContext& context, const Graph& global,
                               int loss, int64_t devices) {
  StrategyTable table = net.strategies();
  const std::string& path = context.strategy_ckpt_load_file;
  if (path.empty()) return table;
  const StrategyTable loaded = load_strategy_file(path);
  check_strategy_file(path, loaded, global, {loss}, devices);
  for (const auto& [op, s] : loaded) table[op] = s;
  return table;
}

Parameter& parameter_named(ParameterList& params, const std::string& name) {
  for (Parameter& p : params)
    if (p.name() == name) return p;
  SF_THROW(NotFound, "semi-auto parallel: the graph's parameter '{}' is not one of the network's", name);
}
}  // namespace

std::unique_ptr<SemiAutoProgram> SemiAutoStep::build(const std::vector<Tensor>& batch) {
  auto sp = std::make_unique<SemiAutoProgram>();
  const comm::RankContext* rank_ctx = comm::current_rank_or_null();
  const int64_t devices = rank_ctx ? rank_ctx->size() : 1;
  const int rank = rank_ctx ? rank_ctx->rank() : 0;

  GraphBuilder global(sp->global);
  std::vector<Value> columns;
  for (size_t c = 0; c < batch.size(); ++c)
    columns.push_back(global.input(fmt::format("input{}", c), batch[c].shape(), batch[c].dtype()));
  const Value loss = loss_(global, columns);
  const AutoParallelContext context = get_auto_parallel_context();
  const StrategyTable given = given_strategies(net_, context, sp->global, loss.id, devices);
  if (context.parallel_mode == ParallelMode::kAutoParallel) {
    sp->search = search_strategies(sp->global, {loss.id}, given, devices, context);
    sp->sharding = shard_graph(sp->global, {loss.id}, sp->search.table, devices);
  } else {
    sp->sharding = shard_graph(sp->global, {loss.id}, given, devices);
  }
  // One writer: every rank's table is the same.
  if (!context.strategy_ckpt_save_file.empty() && rank == 0)
    save_strategy_file(context.strategy_ckpt_save_file, sp->global, sp->sharding);
  sp->local = build_local_graph(sp->global, sp->sharding, rank);

  Program& p = sp->program;
  p.graph = std::move(sp->local.graph);
  sp->forward_nodes = p.graph.size();
  // The local in-place updates (BatchNorm's moving statistics), run each step: fetched after
  // the gradients, as Model and value_and_grad fetch them on one device.
  const std::vector<int> updates = in_place_nodes(p.graph);
  // Every parameter the graph reads is cut to this rank's block: the moving statistics too.
  ParameterList net_params = net_.get_parameters();
  for (const LocalGraph::Source& s : sp->local.parameters) {
    const Node& n = sp->global.node(s.global);
    std::vector<int64_t> offset;
    for (const DimSlice& d : s.layout.slice(n.shape, rank)) offset.push_back(d.offset);
    parameter_named(net_params, n.name).shard(offset, s.layout.local_shape(n.shape));
  }

  // Backward of (loss / devices) on every rank, then each gradient summed over its replicas.
  GraphBuilder b(p.graph);
  const Value local_loss{sp->local.value[loss.id]};
  b.push_scope("Gradients");
  const Value seed = b.mul(local_loss, b.fill({}, 1.0f / static_cast<float>(devices)));
  b.pop_scope();
  std::vector<int> param_ids;
  std::vector<int> grads = parameter_gradients(p.graph, seed.id, params_, &param_ids);
  if (rank_ctx) sp->grad_placement.group = rank_ctx->world();
  for (size_t i = 0; i < params_.size(); ++i) {
    const LocalGraph::Source* src = nullptr;
    for (const LocalGraph::Source& s : sp->local.parameters)
      if (s.local == param_ids[i]) src = &s;
    const std::vector<int> replicas = src->layout.replica_group(rank);
    // After the mirror AllReduce every replica holds the same block gradient: one of them (the
    // lowest) counts it in a global norm, so it is counted once, as on one device.
    const bool lowest = replicas.empty() || rank == *std::min_element(replicas.begin(), replicas.end());
    sp->grad_placement.counted.push_back(lowest);
    if (replicas.size() < 2) continue;
    const std::string name = group_name(replicas);
    sp->local.add_group(name, replicas);
    b.push_scope("Mirror/" + params_[i].name());
    grads[i] = CollectiveBuilder(b, {name, static_cast<int64_t>(replicas.size())}).all_reduce({grads[i]}).id;
    b.pop_scope();
  }
  p.fetches = {local_loss.id};
  p.fetches.insert(p.fetches.end(), grads.begin(), grads.end());
  p.fetches.insert(p.fetches.end(), updates.begin(), updates.end());

  p.inputs.emplace_back();
  std::vector<TensorLayout> layouts;
  for (const Value& c : columns) {
    const int local = sp->local.value[c.id];
    SF_ENFORCE(local >= 0, InvalidArgument, "semi-auto parallel: the loss does not use input column {}",
               sp->global.node(c.id).name);
    p.inputs[0].push_back(local);
    layouts.push_back(sp->sharding.at(c.id).layout);
  }
  for (const Tensor& t : batch) {
    p.shapes.push_back(t.shape());
    p.dtypes.push_back(t.dtype());
  }
  p.shard_input = [layouts, rank](size_t c, const Tensor& column) { return local_block(column, layouts[c], rank); };

  RuntimeOptions opts;
  opts.threads = opts_.threads;
  opts.trace = opts_.trace;
  for (const auto& [name, ranks] : sp->local.groups) opts.collectives.add(group(name, ranks));
  p.runtime = std::make_unique<Runtime>(p.graph, p.fetches, opts);
  for (const LocalGraph::Source& s : sp->local.parameters)
    p.runtime->bind(s.local, parameter_named(net_params, sp->global.node(s.global).name).value());
  if (context.save_graphs) save_graphs(*sp, context.save_graphs_path);
  return sp;
}

}  // namespace sf
