/// @file
/// DistributedGradReducer: MindSpore's nn.DistributedGradReducer — sums the gradients of
/// replicated parameters over the ranks of a group (and divides by the group size when
/// `mean`), so that every rank steps with the same, global gradient.
///
/// @code
///   sf::nn::DistributedGradReducer grad_reducer(optimizer.parameters());
///   auto [loss, grads] = grad_fn({data, label});
///   optimizer.step(grad_reducer(grads));
/// @endcode
///
/// Three ways to use it, one implementation (the bucketed AllReduce of train/grad_buckets.h):
///  * grad_reducer(grads) on tensors, as in the seed's loop: the buckets' AllReduces run as a
///    small program of their own once backward is done (no overlap with compute);
///  * value_and_grad(fn, params, grad_reducer) (train/value_and_grad.h): the reduction is
///    compiled into the gradient program, each bucket's AllReduce starting as soon as its
///    gradients exist while backward continues, and the gradients come back reduced;
///  * Model::train in data-parallel or hybrid-parallel mode builds one itself (train/model.h).
/// With one rank (degree 1) it is the identity and adds nothing to a graph.
///
/// Construct it on a thread bound to a rank (inside sf::comm::run_ranks, or any thread of a
/// process holding one rank): the degree is read there from comm::get_group_size(group).
/// Threading: operator() from one thread at a time; spec() is a plain value.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <shardflow/train/grad_buckets.h>
#include <shardflow/train/parameter.h>
#include <shardflow/train/program.h>

namespace sf::nn {

/// What a reduction needs to be put in a graph: the group, the mean, the bucket size.
struct GradReduceSpec {
  GroupRef group;            ///< the group the gradients are reduced over
  bool mean = false;         ///< divide the sums by the group's size
  int64_t bucket_bytes = 0;  ///< the size at which a gradient bucket closes

  /// The factor the sums are multiplied by: 1 / group size for a mean, else 1.
  float scale() const { return mean ? 1.0f / static_cast<float>(group.size) : 1.0f; }
  /// True for a group of one rank: reducing changes nothing.
  bool identity() const { return group.size == 1; }
  /// The bucketed reduction of `grads`, the mean applied when `apply_mean` (else the caller
  /// folds scale() into what consumes them, e.g.\ the SGD step). Identity: the gradients as
  /// they are.
  ReducedGradients append(Graph& g, const std::vector<int>& grads, bool apply_mean) const;
};

/// The spec from the parallel context and the calling rank (the defaults described below).
GradReduceSpec grad_reduce_spec(std::optional<bool> mean = std::nullopt, std::optional<int> degree = std::nullopt,
                                std::string group = "world", int64_t bucket_bytes = -1);

/// MindSpore's DistributedGradReducer: AllReduces gradients (sum or mean) over a group.
class DistributedGradReducer {
 public:
  /// `parameters`: the optimizer's parameters, in the order of the gradients to reduce. `mean`
  /// defaults to the parallel context's gradients_mean, `degree` to the size of `group` seen
  /// from the calling rank, `bucket_bytes` (< 0) to the context's bucket_bytes.
  explicit DistributedGradReducer(ParameterList parameters, std::optional<bool> mean = std::nullopt,
                                  std::optional<int> degree = std::nullopt, std::string group = "world",
                                  int64_t bucket_bytes = -1);
  DistributedGradReducer(const DistributedGradReducer&) = delete;  ///< its program refers to it
  DistributedGradReducer& operator=(const DistributedGradReducer&) = delete;

  /// The reduced gradients (sum, or mean), valid until the next call. grads[i] belongs to
  /// parameters()[i]; a count or shape mismatch is refused naming the parameter, before any
  /// communication.
  const std::vector<Tensor>& operator()(const std::vector<Tensor>& grads);

  /// The parameters whose gradients it reduces, in order.
  const ParameterList& parameters() const { return params_; }
  /// The group, mean and bucket size it reduces with.
  const GradReduceSpec& spec() const { return spec_; }
  /// The number of ranks the gradients are reduced over.
  int degree() const { return static_cast<int>(spec_.group.size); }
  /// True if it returns the mean, false for the sum.
  bool mean() const { return spec_.mean; }

 private:
  ParameterList params_;
  GradReduceSpec spec_;
  ProgramCache eager_;
  std::vector<Tensor> reduced_;
};

/// InvalidArgument naming `who` and the first parameter of `given` that is not in `network`
/// (the same Parameter, not merely the same name).
void check_parameters_of(const std::string& who, const ParameterList& given, const ParameterList& network);

}  // namespace sf::nn
