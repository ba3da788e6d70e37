#include "train/value_and_grad.h"

#include "core/error.h"
#include "ops/autodiff.h"

namespace sf {

GradFunction::GradFunction(LossBuilder fn, ParameterList params, ExecOptions opts)
    : cache_(
          [fn, params](GraphBuilder& b, const std::vector<std::vector<Value>>& parts, Program& p) {
            Value loss = fn(b, parts[0]);
            std::vector<int> ids;
            p.fetches = {loss.id};
            for (int g : parameter_gradients(b.graph(), loss.id, params, &ids)) p.fetches.push_back(g);
          },
          params, opts) {}

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

GradFunction::Result GradFunction::operator()(const std::vector<Tensor>& inputs) {
  const auto& out = cache_.run(inputs);
  grads_.assign(out.begin() + 1, out.end());
  return {out[0].item(), grads_};
}

GradFunction value_and_grad(LossBuilder fn, ParameterList params, ExecOptions opts) {
  return GradFunction(std::move(fn), std::move(params), opts);
}

ForwardFunction::ForwardFunction(LossBuilder fn, ParameterList params, ExecOptions opts)
    : cache_([fn](GraphBuilder& b, const std::vector<std::vector<Value>>& parts,
                  Program& p) { p.fetches = {fn(b, parts[0]).id}; },
             std::move(params), opts) {}

}  // namespace sf
