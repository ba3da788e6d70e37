#include <shardflow/train/model.h>

#include <algorithm>
#include <set>

#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>
#include <shardflow/core/fault_point.h>
#include <shardflow/train/gather_parameters.h>
#include <shardflow/train/needs_ranks.h>
#include <shardflow/train/sgd_in_graph.h>

namespace sf {

namespace {
// The checks that come before anything reads the network (its parameters are finalized in the
// member initializers): its parallel mode has ranks, and no other rank of this process uses it.
nn::Cell& checked_network(nn::Cell& net) {
  check_parallel_mode_has_ranks("Model");
  net.claim_for_calling_rank();
  return net;
}
}  // namespace

Model::Model(nn::Cell& net, std::shared_ptr<nn::LossFn> loss, std::shared_ptr<nn::Optimizer> optimizer,
             ExecOptions opts)
    : net_(checked_network(net)),
      loss_(std::move(loss)),
      optimizer_(std::move(optimizer)),
      opts_(opts),
      train_step_(
          [this](GraphBuilder& b, const std::vector<std::vector<Value>>& parts, Program& p) {
            // One copy of the network per row block; the loss is the mean of the blocks'
            // (equal-sized) mean losses, which is the mean over the whole batch.
            Value loss;
            for (const auto& in : parts) {
              Value l = (*loss_)(b, net_(b, in[0]), in[1]);
              loss = loss.valid() ? b.add(loss, l) : l;
            }
            if (parts.size() > 1) loss = b.mul(loss, b.fill({}, 1.0f / static_cast<float>(parts.size())));
            // In-place state updates of the forward (BatchNorm's moving statistics) run each step
            // too, fetched after the gradients. Each row block would update the same tensors.
            const std::vector<int> updates = in_place_nodes(b.graph());
            SF_ENFORCE(updates.empty() || parts.size() == 1, InvalidArgument,
                       "Model: the network updates state in its forward ({}), which {} row blocks per batch would "
                       "each update; use ExecOptions::batch_splits = 1",
                       node_label(b.graph().node(updates[0])), parts.size());
            std::vector<int> params;
            std::vector<int> grads = parameter_gradients(b.graph(), loss.id, optimizer_->parameters(), &params);
            const auto lr = optimizer_->in_graph_sgd_rate();
            if (reduce_) {
              // The update needs every rank's gradient: reduce, then step (mean folded into lr).
              const ReducedGradients reduced = reduce_->append(b.graph(), grads, !lr);
              grads = lr ? append_reduced_sgd_updates(b.graph(), params, reduced, *lr * reduce_->scale())
                         : unpack_reduced(b.graph(), reduced, grads);
            } else if (lr && !opts_.fuse_sgd) {
              ReducedGradients same;  // no reduction: each gradient where autodiff put it
              same.node = grads;
              same.offset.assign(grads.size(), 0);
              grads = append_reduced_sgd_updates(b.graph(), params, same, *lr);
            } else if (lr) {
              std::vector<WholeInput> wholes;
              for (size_t c = 0; c < p.wholes.size(); ++c) {
                wholes.push_back({{}, p.wholes[c]});
                for (const auto& in : parts) wholes.back().parts.push_back(in[c].id);
              }
              grads = append_sgd_updates(b.graph(), params, grads, *lr, wholes);
            }
            p.fetches = {loss.id};
            p.fetches.insert(p.fetches.end(), grads.begin(), grads.end());
            p.fetches.insert(p.fetches.end(), updates.begin(), updates.end());
          },
          net.get_parameters(), opts, opts.batch_splits > 0 ? opts.batch_splits : opts.threads) {
  // Without an optimizer (evaluation only) the model works on the network's own parameters.
  const ParameterList params = optimizer_ ? optimizer_->parameters() : net_.trainable_params();
  if (optimizer_) nn::check_parameters_of("Model", params, net_.trainable_params());
  mode_ = get_auto_parallel_context().parallel_mode;
  const bool sharded = mode_ == ParallelMode::kSemiAutoParallel || mode_ == ParallelMode::kAutoParallel;
  SF_ENFORCE(mode_ == ParallelMode::kStandAlone || reduces_gradients(mode_) || sharded, InvalidArgument,
             "Model: parallel_mode {} is not supported yet (stand_alone, data_parallel, hybrid_parallel, "
             "semi_auto_parallel, auto_parallel are)",
             parallel_mode_name(mode_));
  if (sharded)
    semi_ = std::make_unique<SemiAutoStep>(
        net_, [this](GraphBuilder& b, const std::vector<Value>& in) { return (*loss_)(b, net_(b, in[0]), in[1]); },
        params, opts_);
  if (reduces_gradients(mode_)) {
    nn::GradReduceSpec spec = nn::grad_reduce_spec();
    if (!spec.identity()) reduce_ = spec;
  }
}

Model::Model(nn::Cell& net) : Model(net, std::make_shared<nn::CrossEntropyLoss>(), nullptr) {}

Model::Model(nn::PipelineCell& net, std::shared_ptr<nn::Optimizer> optimizer, ExecOptions opts)
    : Model(net.net_with_loss().network(), net.net_with_loss().loss(), optimizer, opts) {
  semi_.reset();
  reduce_.reset();
  comm::RankContext* rank = comm::current_rank_or_null();
  pipeline_ = std::make_unique<PipelineStep>(net, optimizer_, get_auto_parallel_context(), rank ? rank->size() : 1,
                                             opts.trace);
}

namespace {
// Data parallel: each rank must read its own shard, or the ranks would train on the same rows.
void check_sharding(const dataset::Dataset& ds, int size) {
  const int rank = comm::get_rank();
  SF_ENFORCE(ds.num_shards() == size && ds.shard_id() == rank, InvalidArgument,
             "Model::train: data parallel over {} ranks needs each rank's dataset sharded with num_shards = {} and "
             "shard_id = its rank ({}); this dataset has num_shards = {}, shard_id = {}",
             size, size, rank, ds.num_shards(), ds.shard_id());
}
}  // namespace

void Model::train(int64_t epochs, const dataset::Dataset& train_set, const std::vector<CallbackPtr>& callbacks,
                  int64_t initial_epoch) {
  SF_ENFORCE(epochs < 1 || (initial_epoch >= 0 && initial_epoch < epochs), InvalidArgument,
             "Model::train: initial_epoch must be in [0, epochs) = [0, {}) (epochs is the total count, as "
             "MindSpore's), got {}",
             epochs, initial_epoch);
  train(epochs, train_set, callbacks, ResumePoint{initial_epoch, 0});
}

void Model::train(int64_t epochs, const dataset::Dataset& train_set, const std::vector<CallbackPtr>& callbacks,
                  ResumePoint from) {
  SF_ENFORCE(optimizer_ != nullptr, InvalidArgument,
             "Model::train: this model was built for evaluation only (Model(net)); build it with a loss and an "
             "optimizer to train");
  SF_ENFORCE(epochs >= 1, InvalidArgument, "Model::train: epochs must be >= 1, got {}", epochs);
  SF_ENFORCE(from.epoch >= 0 && from.epoch < epochs, InvalidArgument,
             "Model::train: the resume point's epoch must be in [0, epochs) = [0, {}), got {}", epochs, from.epoch);
  SF_ENFORCE(train_set.batch_size() > 0, InvalidArgument, "Model::train: the dataset is not batched (call batch())");
  SF_ENFORCE(train_set.column_names().size() == 2, InvalidArgument,
             "Model::train: the dataset must have 2 columns (data, label), it has {}", train_set.column_names().size());
  SF_ENFORCE(from.step >= 0 && from.step < std::max<int64_t>(train_set.get_dataset_size(), 1), InvalidArgument,
             "Model::train: the resume point's step must be in [0, steps per epoch) = [0, {}), got {} (a point "
             "after an epoch's last step is the next epoch's step 0)",
             train_set.get_dataset_size(), from.step);
  if (reduce_ && mode_ == ParallelMode::kDataParallel) check_sharding(train_set, static_cast<int>(reduce_->group.size));
  // A stage's optimizer sees only its stages' gradients: its norm would not be the global one.
  SF_ENFORCE(!pipeline_ || !optimizer_->max_grad_norm(), InvalidArgument,
             "Model::train: max_grad_norm (gradient clipping) is not supported in pipeline parallel yet: each stage's "
             "optimizer holds only its stages' gradients");
  if (pipeline_) {
    run_epochs(epochs, from, train_set, callbacks, [&](dataset::BatchIterator& it, const StepDone& step_done) {
      while (const std::vector<Tensor>* batch = it.next()) {
        fault_point("step");
        step_done(pipeline_->step(*batch));
      }
    });
    return;
  }
  const bool in_graph = !semi_ && optimizer_->in_graph_sgd_rate().has_value();
  // The programs already built either run the SGD update or fetch the gradients: turning
  // clipping on or off afterwards would read updates as gradients, or the reverse.
  if (!train_step_.last()) in_graph_sgd_ = in_graph;
  SF_ENFORCE(in_graph == in_graph_sgd_, InvalidArgument,
             "Model::train: the SGD step was {} the training graph at the first train(); set the optimizer's "
             "max_grad_norm before it",
             in_graph_sgd_ ? "compiled into" : "left out of");
  std::vector<Tensor> grads;
  run_epochs(epochs, from, train_set, callbacks, [&](dataset::BatchIterator& it, const StepDone& step_done) {
    const std::vector<Tensor>* batch = it.next();
    // Steps run back to back inside the actor system; a batch of another shape (a short last
    // batch) ends the loop and continues on the program built for it.
    while (batch) {
      Program& program = semi_ ? semi_->get(*batch) : train_step_.get(*batch);
      // Where this rank's gradient blocks lie, for clipping by their global norm (unread when off).
      if (semi_) optimizer_->set_grad_placement(semi_->last()->grad_placement);
      program.runtime->run_steps(
          [&](Runtime::Feeds& feeds) {
            if (!batch || !program.accepts(*batch)) return false;
            fault_point("step");
            program.feeds(*batch, feeds);
            return true;
          },
          [&](const std::vector<Tensor>& out) {
            if (in_graph) {
              optimizer_->count_step();
            } else {
              const auto n = static_cast<std::ptrdiff_t>(optimizer_->parameters().size());
              grads.assign(out.begin() + 1, out.begin() + 1 + n);
              optimizer_->step(grads);
            }
            step_done(out[0].item());
            batch = it.next();
          });
    }
  });
}

void Model::prepare(const dataset::Dataset& train_set) {
  if (!semi_ && !pipeline_) return;
  SF_ENFORCE(train_set.batch_size() > 0, InvalidArgument, "Model::prepare: the dataset is not batched (call batch())");
  // Any epoch's first batch has the signature the step is built for (a short last batch gets
  // its own program when it comes).
  dataset::BatchIterator it = train_set.iterator(0);
  const std::vector<Tensor>* batch = it.next();
  SF_ENFORCE(batch != nullptr, InvalidArgument, "Model::prepare: the dataset has no batch");
  if (semi_) {
    semi_->get(*batch);
  } else {
    pipeline_->prepare(*batch);
  }
}

ParameterList Model::held_parameters() {
  if (!pipeline_) return net_.get_parameters();
  std::set<std::string> names;
  if (pipeline_->runtime()) {
    const auto& read = pipeline_->runtime()->parameter_names();
    names.insert(read.begin(), read.end());
  } else {
    for (const Parameter& p : optimizer_->parameters()) names.insert(p.name());
  }
  ParameterList out;
  for (const Parameter& p : net_.get_parameters())
    if (names.count(p.name())) out.push_back(p);
  return out;
}

std::pair<int, int> Model::replica() const {
  if (pipeline_) {
    const pipeline::StageRuntime* rt = pipeline_->runtime();
    return rt ? std::pair{rt->replica(), pipeline_->replicas()} : std::pair{0, 1};
  }
  const comm::RankContext* rank = comm::current_rank_or_null();
  return rank ? std::pair{rank->rank(), rank->size()} : std::pair{0, 1};
}

void Model::run_epochs(int64_t epochs, ResumePoint from, const dataset::Dataset& train_set,
                       const std::vector<CallbackPtr>& callbacks, const EpochFn& run_epoch) {
  // Each rank counts its own epochs of a dataset the ranks share (data/epoch_counter.h).
  const std::shared_ptr<comm::RankContext> rank = comm::current_rank_shared();
  const int reader = rank ? rank->rank() : dataset::Dataset::kNoReader;
  if (from.epoch > 0 || from.step > 0) train_set.set_epoch(from.epoch, reader);
  RunContext ctx;
  ctx.epochs = epochs;
  ctx.steps_per_epoch = train_set.get_dataset_size();
  ctx.optimizer = optimizer_.get();
  ctx.network = &net_;
  ctx.train_dataset = &train_set;
  ctx.model = this;
  ctx.global_step = optimizer_->global_step();
  ctx.epoch = from.epoch;  // the last epoch done
  // Where the run stands (train/resume_point.h): the epoch the next step reads, and its steps done.
  ctx.dataset_epoch = train_set.epoch(reader);
  ctx.step_in_epoch = from.step;
  for (auto& cb : callbacks) cb->on_train_begin(ctx);
  for (int64_t e = from.epoch; e < epochs; ++e) {
    ctx.epoch = e + 1;
    ctx.dataset_epoch = train_set.epoch(reader);
    ctx.step_in_epoch = e == from.epoch ? from.step : 0;
    for (auto& cb : callbacks) cb->on_epoch_begin(ctx);
    dataset::BatchIterator it = train_set.next_epoch(reader);
    it.skip(ctx.step_in_epoch);
    run_epoch(it, [&](float loss) {
      // The callbacks run as the training rank (its log lines are labelled by it) even when
      // the step ends on a runtime thread.
      comm::RankBinding bind(rank);
      ++ctx.step_in_epoch;
      ctx.global_step = optimizer_->global_step();
      ctx.loss = loss;
      for (auto& cb : callbacks) cb->on_step_end(ctx);
    });
    for (auto& cb : callbacks) cb->on_epoch_end(ctx);
  }
  for (auto& cb : callbacks) cb->on_train_end(ctx);
}

namespace {
// Semi-auto / auto parallel: the network's parameters as one device holds them, from the ranks'
// blocks — new Parameters of the same names (the forward binds by name) holding the whole
// values. Gathering and running the whole network is the simplest exact way: replicas of a
// block are equal, so every rank evaluates exactly what one device would; the price is that
// each rank holds every parameter while it evaluates.
ParameterList whole_parameters(const ParameterList& params) {
  const std::vector<Tensor> whole = gather_parameters(params);
  ParameterList out;
  for (size_t i = 0; i < params.size(); ++i) {
    Parameter p(params[i].shape(), "zeros");
    p.finalize(params[i].name(), get_seed());
    p.value() = whole[i];
    out.push_back(p);
  }
  return out;
}
}  // namespace

double Model::eval_accuracy(const dataset::Dataset& eval_set) {
  SF_ENFORCE(eval_set.batch_size() > 0, InvalidArgument, "Model::eval_accuracy: the dataset is not batched");
  auto forward = [this](GraphBuilder& b, const std::vector<Value>& in) { return net_(b, in[0]); };
  // The parameters change with training, so the sharded case gathers (and builds) anew each call.
  if (semi_) forward_fn_ = std::make_unique<ForwardFunction>(forward, whole_parameters(net_.get_parameters()), opts_);
  // A pipeline whose stages cut parameters gives whole copies of those, anew each call.
  if (pipeline_)
    forward_fn_ =
        std::make_unique<ForwardFunction>(forward, pipeline_->share_parameters(net_.get_parameters()), opts_);
  if (!forward_fn_) forward_fn_ = std::make_unique<ForwardFunction>(forward, net_.get_parameters(), opts_);
  int64_t correct = 0, total = 0;
  dataset::BatchIterator it = eval_set.iterator(0);
  while (const std::vector<Tensor>* batch = it.next()) {
    const Tensor& logits = (*forward_fn_)({(*batch)[0]});
    const Tensor& labels = (*batch)[1];
    SF_ENFORCE(labels.dtype() == DType::kI32, InvalidArgument, "Model::eval_accuracy: labels must be i32, got {}",
               labels.describe());
    const int64_t n = logits.dim(0), c = logits.dim(1);
    const float* p = logits.f32();
    for (int64_t i = 0; i < n; ++i) {
      int64_t best = 0;
      for (int64_t j = 1; j < c; ++j)
        if (p[i * c + j] > p[i * c + best]) best = j;
      correct += best == labels.i32()[i];
    }
    total += n;
  }
  SF_ENFORCE(total > 0, InvalidArgument, "Model::eval_accuracy: the dataset is empty");
  return static_cast<double>(correct) / static_cast<double>(total);
}

}  // namespace sf
