#include "train/value_and_grad.h"

#include "ops/autodiff.h"

namespace sf {

GradFunction::GradFunction(LossBuilder fn, ParameterList params, ExecOptions opts)
    : cache_(
          [fn, params](GraphBuilder& b, const std::vector<Value>& in, Program& p) mutable {
            Value loss = fn(b, in);
            std::vector<int> wrt;
            for (auto& param : params) {
              int id = b.graph().find(param.name());
              SF_ENFORCE(id >= 0, InvalidArgument, "value_and_grad: parameter '{}' is not used by the network",
                         param.name());
              wrt.push_back(id);
            }
            p.fetches = {loss.id};
            for (int g : gradients(b.graph(), loss.id, wrt)) p.fetches.push_back(g);
          },
          params, opts) {}

GradFunction::Result GradFunction::operator()(const std::vector<Tensor>& inputs) {
  const auto& out = cache_.run(inputs);
  grads_.assign(out.begin() + 1, out.end());
  return {out[0].item(), grads_};
}

GradFunction value_and_grad(LossBuilder fn, ParameterList params, ExecOptions opts) {
  return GradFunction(std::move(fn), std::move(params), opts);
}

ForwardFunction::ForwardFunction(LossBuilder fn, ParameterList params, ExecOptions opts)
    : cache_([fn](GraphBuilder& b, const std::vector<Value>& in, Program& p) { p.fetches = {fn(b, in).id}; },
             std::move(params), opts) {}

}  // namespace sf
