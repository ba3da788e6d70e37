#include <shardflow/train/grad_reducer.h>

#include <algorithm>

#include <shardflow/comm/rank_context.h>
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/parallel/context.h>
#include <shardflow/train/needs_ranks.h>

namespace sf::nn {

ReducedGradients GradReduceSpec::append(Graph& g, const std::vector<int>& grads, bool apply_mean) const {
  if (identity()) {
    ReducedGradients r;
    r.node = grads;
    r.offset.assign(grads.size(), 0);
    return r;
  }
  return append_grad_all_reduce(g, grads, group, bucket_bytes, apply_mean ? scale() : 1.0f);
}

GradReduceSpec grad_reduce_spec(std::optional<bool> mean, std::optional<int> degree, std::string group,
                                int64_t bucket_bytes) {
  if (!degree) check_parallel_mode_has_ranks("DistributedGradReducer");
  const AutoParallelContext ctx = get_auto_parallel_context();
  GradReduceSpec s;
  s.mean = mean.value_or(ctx.gradients_mean);
  s.group.size = degree ? *degree : comm::get_group_size(group);
  SF_ENFORCE(s.group.size >= 1, InvalidArgument, "DistributedGradReducer: degree must be >= 1, got {}", s.group.size);
  s.group.name = std::move(group);
  s.bucket_bytes = bucket_bytes < 0 ? ctx.bucket_bytes : bucket_bytes;
  return s;
}

DistributedGradReducer::DistributedGradReducer(ParameterList parameters, std::optional<bool> mean,
                                               std::optional<int> degree, std::string group, int64_t bucket_bytes)
    : params_(std::move(parameters)),
      spec_(grad_reduce_spec(mean, degree, std::move(group), bucket_bytes)),
      eager_(
          [this](GraphBuilder& b, const std::vector<std::vector<Value>>& parts, Program& p) {
            std::vector<int> grads;
            for (const Value& v : parts[0]) grads.push_back(v.id);
            p.fetches = unpack_reduced(b.graph(), spec_.append(b.graph(), grads, true), grads);
          },
          {}, {}) {}

const std::vector<Tensor>& DistributedGradReducer::operator()(const std::vector<Tensor>& grads) {
  SF_ENFORCE(grads.size() == params_.size(), InvalidArgument,
             "DistributedGradReducer: {} gradients for {} parameters", grads.size(), params_.size());
  for (size_t i = 0; i < grads.size(); ++i)
    SF_ENFORCE(grads[i].defined() && grads[i].shape() == params_[i].shape() && grads[i].dtype() == DType::kF32,
               ShapeError, "DistributedGradReducer: gradient {} for parameter '{}' of shape {}",
               grads[i].defined() ? grads[i].describe() : "undefined", params_[i].name(),
               brief_shape(params_[i].shape()));
  if (spec_.identity()) {
    reduced_ = grads;
    return reduced_;
  }
  reduced_ = eager_.run(grads);
  return reduced_;
}

void check_parameters_of(const std::string& who, const ParameterList& given, const ParameterList& network) {
  for (const Parameter& p : given)
    SF_ENFORCE(std::find(network.begin(), network.end(), p) != network.end(), InvalidArgument,
               "{}: parameter '{}' is not a parameter of the network (give the optimizer net.trainable_params())",
               who, p.defined() ? p.name() : "<undefined>");
}

}  // namespace sf::nn
