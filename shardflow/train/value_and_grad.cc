#include <shardflow/train/value_and_grad.h>

#include <shardflow/core/error.h>
#include <shardflow/ops/autodiff.h>
#include <shardflow/parallel/context.h>
#include <shardflow/train/needs_ranks.h>
#include <shardflow/train/semi_auto_step.h>

namespace sf {

GradFunction::GradFunction(LossBuilder fn, ParameterList params, ExecOptions opts,
                           std::optional<nn::GradReduceSpec> reduce)
    : cache_(
          [fn, params, reduce](GraphBuilder& b, const std::vector<std::vector<Value>>& parts, Program& p) {
            Value loss = fn(b, parts[0]);
            // In-place state updates of the forward (BatchNorm's moving statistics) run each
            // call, as in Model: fetched after the gradients, so that they are needed.
            const std::vector<int> updates = in_place_nodes(b.graph());
            std::vector<int> ids;
            std::vector<int> grads = parameter_gradients(b.graph(), loss.id, params, &ids);
            if (reduce && !reduce->identity())
              grads = unpack_reduced(b.graph(), reduce->append(b.graph(), grads, true), grads);
            p.fetches = {loss.id};
            p.fetches.insert(p.fetches.end(), grads.begin(), grads.end());
            p.fetches.insert(p.fetches.end(), updates.begin(), updates.end());
          },
          params, opts),
      grad_count_(params.size()) {}

std::vector<int> parameter_gradients(Graph& g, int loss, const ParameterList& params, std::vector<int>* param_ids) {
  param_ids->clear();
  for (const auto& param : params) {
    int id = g.find(param.name());
    SF_ENFORCE(id >= 0 && g.node(id).op == "Parameter", InvalidArgument,
               "parameter '{}' is not used by the network", param.name());
    param_ids->push_back(id);
  }
  return gradients(g, loss, *param_ids);
}

GradFunction::GradFunction(LossBuilder fn, nn::Cell& net, ParameterList params, ExecOptions opts)
    : cache_([](GraphBuilder&, const std::vector<std::vector<Value>>&, Program&) {}, {}, opts),
      grad_count_(params.size()) {
  semi_ = std::make_unique<SemiAutoStep>(net, std::move(fn), std::move(params), opts);
}

GradFunction::~GradFunction() = default;
GradFunction::GradFunction(GradFunction&&) noexcept = default;

Program* GradFunction::last_program() {
  if (!semi_) return cache_.last();
  return semi_->last() ? &semi_->last()->program : nullptr;
}

SemiAutoProgram* GradFunction::semi_auto_program() { return semi_ ? semi_->last() : nullptr; }

GradFunction::Result GradFunction::operator()(const std::vector<Tensor>& inputs) {
  const std::vector<Tensor>* run = nullptr;
  if (semi_) {
    Program& p = semi_->get(inputs);
    p.feeds(inputs, feeds_);
    run = &p.runtime->run(feeds_);
  } else {
    run = &cache_.run(inputs);
  }
  const auto& out = *run;
  // Both kinds of program fetch the in-place updates after the gradients.
  const auto grads_end = out.begin() + 1 + static_cast<std::ptrdiff_t>(grad_count_);
  grads_.assign(out.begin() + 1, grads_end);
  return {out[0].item(), grads_};
}

GradFunction value_and_grad(LossBuilder fn, ParameterList params, ExecOptions opts) {
  check_parallel_mode_has_ranks("value_and_grad");
  const ParallelMode mode = get_auto_parallel_context().parallel_mode;
  SF_ENFORCE(mode != ParallelMode::kSemiAutoParallel && mode != ParallelMode::kAutoParallel, InvalidArgument,
             "value_and_grad: {} mode shards the network's ops; pass the network too: "
             "value_and_grad(fn, net, params)",
             parallel_mode_name(mode));
  return GradFunction(std::move(fn), std::move(params), opts);
}

GradFunction value_and_grad(LossBuilder fn, nn::Cell& net, ParameterList params, ExecOptions opts) {
  check_parallel_mode_has_ranks("value_and_grad");
  net.claim_for_calling_rank();
  return GradFunction(std::move(fn), net, std::move(params), opts);
}

GradFunction value_and_grad(LossBuilder fn, ParameterList params, const nn::DistributedGradReducer& grad_reducer,
                            ExecOptions opts) {
  check_parallel_mode_has_ranks("value_and_grad");
  SF_ENFORCE(grad_reducer.parameters() == params, InvalidArgument,
             "value_and_grad: the grad reducer was made for other parameters than the {} given (make it from the "
             "same list, e.g. optimizer.parameters() with the optimizer built on these)",
             params.size());
  return GradFunction(std::move(fn), std::move(params), opts, grad_reducer.spec());
}

ForwardFunction::ForwardFunction(LossBuilder fn, ParameterList params, ExecOptions opts)
    : cache_([fn](GraphBuilder& b, const std::vector<std::vector<Value>>& parts,
                  Program& p) { p.fetches = {fn(b, parts[0]).id}; },
             std::move(params), opts) {}

}  // namespace sf
