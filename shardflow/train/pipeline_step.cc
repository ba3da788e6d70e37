#include <shardflow/train/pipeline_step.h>

#include <exception>
#include <map>
#include <set>

#include <shardflow/comm/all_reduce.h>
#include <shardflow/comm/all_gather.h>
#include <shardflow/comm/broadcast.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>
#include <shardflow/parallel/reshard.h>
#include <shardflow/parallel/strategy_file.h>
#include <shardflow/train/save_graphs.h>

namespace sf {

PipelineStep::PipelineStep(nn::PipelineCell& cell, std::shared_ptr<nn::Optimizer> optimizer,
                           const AutoParallelContext& context, int devices, bool record_timeline)
    : cell_(cell),
      optimizer_(std::move(optimizer)),
      context_(context),
      stages_(context.pipeline_stages),
      chunks_(context.pipeline_interleave),
      per_stage_(devices / std::max(context.pipeline_stages, 1)),
      micro_(cell.micro_size()),
      record_(record_timeline),
      schedule_(pipeline_schedule(context, devices, cell.micro_size())) {}

void PipelineStep::build_agreed(const std::vector<Tensor>& batch) {
  // Most refusals are the same on every rank; one that is not (an optimizer given other
  // parameters on one rank) must not leave the others waiting for it: the ranks agree on
  // whether all of them built before any tensor moves.
  std::exception_ptr error;  // rethrown as thrown (a ShapeError stays one)
  try {
    build(batch);
  } catch (const InvalidArgument&) {
    error = std::current_exception();
    runtime_.reset();
  }
  comm::RankContext& ctx = comm::current_rank();
  Tensor failed = Tensor::zeros({ctx.size()});
  failed.f32()[ctx.rank()] = error ? 1.0f : 0.0f;
  failed = comm::all_reduce(failed, {.group = ctx.world()});
  if (error) std::rethrow_exception(error);
  for (int r = 0; r < ctx.size(); ++r)
    SF_ENFORCE(failed.f32()[r] == 0.0f, InvalidArgument,
               "pipeline: rank {} refused the configuration (its error says why); no step was run", r);
}

void PipelineStep::build(const std::vector<Tensor>& batch) {
  const Tensor& data = batch[0];
  const Tensor& label = batch[1];
  const int64_t rows = data.dim(0);
  SF_ENFORCE(rows % micro_ == 0, InvalidArgument,
             "pipeline: the batch of {} rows is not divisible by micro_size {}", rows, micro_);
  // The stages are built on a whole micro-batch; each stage's sharding cuts it over its devices.
  Shape data_shape = data.shape();
  data_shape[0] = rows / micro_;
  Shape label_shape = label.shape();
  label_shape[0] = rows / micro_;

  nn::WithLossCell& nwl = cell_.net_with_loss();
  auto stages = split_pipeline_cell(cell_, {data_shape, label_shape}, {data.dtype(), label.dtype()}, stages_ * chunks_);
  stage_graphs_ = stages;

  std::map<std::string, Parameter> by_name;
  for (Parameter& p : nwl.network().get_parameters()) by_name.emplace(p.name(), p);
  // Every rank checks every stage, so all refuse alike: a trainable parameter a stage reads must
  // be one infer_param_pipeline_stage() gives that stage's optimizer.
  for (const pipeline::StageGraph& sg : *stages) {
    std::set<std::string> given;
    for (const Parameter& p : nwl.network().params_of_stages({sg.virtual_stage})) given.insert(p.name());
    for (const std::string& name : sg.param_names) {
      auto it = by_name.find(name);
      SF_ENFORCE(it != by_name.end(), InvalidArgument, "pipeline: the graph reads '{}', which is not a parameter of the network", name);
      SF_ENFORCE(!it->second.requires_grad() || given.count(name), InvalidArgument,
                 "pipeline: stage {} reads parameter '{}', which belongs to another stage; call "
                 "add_pipeline_stage({}) on it so that stage's optimizer updates it too",
                 sg.virtual_stage, name, sg.virtual_stage);
    }
  }
  std::map<std::string, int> optimizer_index;
  for (size_t i = 0; i < optimizer_->parameters().size(); ++i)
    optimizer_index[optimizer_->parameters()[i].name()] = static_cast<int>(i);
  runtime_.reset();
  strategies_ = stage_strategies(*stages, nwl.network().strategies(), context_, per_stage_);
  const int local_rank = comm::current_rank().rank() % per_stage_;
  // A parameter an operator-parallel stage cuts keeps only this rank's block (generated from its
  // initializer), as in semi-auto parallel.
  auto param_value = [&](const std::string& name, const TensorLayout& layout, const Shape& shape) {
    Parameter& p = by_name.at(name);
    const Shape block = layout.local_shape(shape);
    if (block != shape) {
      std::vector<int64_t> offset;
      for (const DimSlice& d : layout.slice(shape, local_rank)) offset.push_back(d.offset);
      p.shard(offset, block);
    }
    return p.value();
  };
  runtime_ = std::make_unique<pipeline::StageRuntime>(
      stages, schedule_, param_value,
      pipeline::StageRuntimeOptions{.per_stage = per_stage_,
                                    .gradients_mean = context_.gradients_mean,
                                    .record_timeline = record_,
                                    .strategies = strategies_.table});
  const auto& names = runtime_->parameter_names();
  std::map<std::string, int> runtime_index;
  for (size_t i = 0; i < names.size(); ++i) runtime_index[names[i]] = static_cast<int>(i);
  grad_index_.clear();
  for (const Parameter& p : optimizer_->parameters()) {
    auto it = runtime_index.find(p.name());
    SF_ENFORCE(it != runtime_index.end(), InvalidArgument,
               "pipeline: the optimizer updates '{}', which stage {} does not read; give it "
               "net.infer_param_pipeline_stage()",
               p.name(), runtime_->stage());
    grad_index_.push_back(it->second);
  }
  for (const std::string& name : names)
    SF_ENFORCE(!by_name.at(name).requires_grad() || optimizer_index.count(name), InvalidArgument,
               "pipeline: stage {} reads parameter '{}' but the optimizer does not update it; give the optimizer "
               "net.infer_param_pipeline_stage()",
               runtime_->stage(), name);
  built_for_ = data.shape();
  if (!context_.strategy_ckpt_save_file.empty() && comm::current_rank().rank() == 0)
    save_strategy_file(context_.strategy_ckpt_save_file, used_strategies());
  if (context_.save_graphs) save_graphs(context_.save_graphs_path);
}

StrategyTable PipelineStep::used_strategies() const {
  SF_ENFORCE(runtime_, InvalidArgument, "pipeline: the strategies are known once a step is built");
  return strategies_of(*stage_graphs_, runtime_->program().shardings);
}

std::vector<std::string> PipelineStep::save_graphs(const std::string& path) const {
  SF_ENFORCE(runtime_, InvalidArgument, "pipeline: the parallel IR exists once a step is built");
  return sf::save_graphs(runtime_->program(), *stage_graphs_, comm::current_rank().rank(), path);
}

void PipelineStep::prepare(const std::vector<Tensor>& batch) {
  SF_ENFORCE(batch.size() == 2, InvalidArgument, "pipeline: a batch is (data, label), got {} columns", batch.size());
  if (!runtime_ || batch[0].shape() != built_for_) build_agreed(batch);
}

float PipelineStep::step(const std::vector<Tensor>& batch) {
  prepare(batch);
  const int64_t micro_rows = batch[0].dim(0) / micro_;
  last_ = runtime_->run_step([&](int micro, const std::string& name) {
    const Tensor& column = name == "data" ? batch[0] : batch[1];
    return column.rows(micro * micro_rows, (micro + 1) * micro_rows);
  });
  std::vector<Tensor> grads;
  for (int i : grad_index_) grads.push_back(last_.grads[i]);
  optimizer_->step(grads);
  return last_.loss;
}

ParameterList PipelineStep::share_parameters(const ParameterList& params) {
  SF_ENFORCE(stage_graphs_ && runtime_, InvalidArgument,
             "pipeline: parameters can be shared only after a training step");
  const pipeline::StageProgram& prog = runtime_->program();
  const comm::Group world = comm::current_rank().world();
  const int rank = comm::current_rank().rank();
  ParameterList out;
  for (const Parameter& p : params) {
    // The first virtual stage that reads it, and how that stage cuts it.
    const pipeline::StageGraph* first = nullptr;
    int id = -1;
    for (const pipeline::StageGraph& sg : *stage_graphs_) {
      id = sg.graph.find(p.name());
      if (id >= 0 && prog.shardings[sg.virtual_stage].by_node.count(id)) {
        first = &sg;
        break;
      }
    }
    if (!first) {  // read by no stage: every rank has its initial value
      out.push_back(p);
      continue;
    }
    const int stage = first->virtual_stage % stages_;
    const TensorLayout& layout = prog.shardings[first->virtual_stage].at(id).layout;
    const Shape whole_shape = p.shape();
    const Shape block = layout.local_shape(whole_shape);
    if (block == whole_shape) {  // whole on its stage: broadcast it from the stage's first rank
      Tensor value = p.value();
      value.copy_from(comm::broadcast(value, {.group = world, .root = stage * per_stage_}));
      out.push_back(p);
      continue;
    }
    // Cut over its stage: every rank gathers the stage's blocks and joins them into a new
    // Parameter of the same name holding the whole value (the network's keeps its block).
    const bool holds = rank / per_stage_ == stage;
    Tensor mine = holds ? p.value().view({1, numel(block)}) : Tensor::zeros({1, numel(block)});
    const Tensor all = comm::all_gather(mine, {.group = world});
    // Replicas of a block may differ (each data-parallel replica's own moving statistics): every
    // block is taken from the lowest rank holding it, the one an unsplit parameter is broadcast from.
    std::vector<Tensor> blocks;
    for (int j = 0; j < per_stage_; ++j) {
      const int holder = stage * per_stage_ + layout.replica_group(j).front();
      blocks.push_back(all.rows(holder, holder + 1).view(block));
    }
    const TensorLayout one = TensorLayout::replicated(DeviceMatrix({1}), static_cast<int>(whole_shape.size()));
    const Tensor whole = reshard(blocks, whole_shape, layout, one)[0];
    Parameter copy(whole_shape, "zeros");
    copy.finalize(p.name(), get_seed());
    copy.value() = whole;
    out.push_back(copy);
  }
  return out;
}

}  // namespace sf
