/// @file
/// value_and_grad: MindSpore's functional training API. Given a function that builds the
/// loss from inputs, returns a callable computing (loss, d loss / d params) on the actor
/// runtime:
///
/// @code
///   auto grad_fn = sf::value_and_grad(forward_fn, net.trainable_params());
///   auto [loss, grads] = grad_fn({data, label});
///   optimizer.step(grads);
/// @endcode
///
/// Every parameter the network reads is bound, not only `params` (train/parameter_record.h),
/// and in-place state updates of the forward run each call, so a network with BatchNorm trains
/// as under Model: the moving statistics move with every call made in training mode.
#pragma once

#include <functional>
#include <vector>

#include <shardflow/train/cell.h>
#include <shardflow/train/grad_reducer.h>
#include <shardflow/train/program.h>

namespace sf {

/// Builds the scalar loss from the input values (data, label, ...).
using LossBuilder = std::function<Value(GraphBuilder& b, const std::vector<Value>& inputs)>;

class SemiAutoStep;
struct SemiAutoProgram;

/// The callable value_and_grad() returns: (loss, gradients) of the parameters for given inputs.
class GradFunction {
 public:
  /// With `reduce`, the gradients are reduced inside the program (see value_and_grad below).
  GradFunction(LossBuilder fn, ParameterList params, ExecOptions opts = {},
               std::optional<nn::GradReduceSpec> reduce = std::nullopt);
  /// Semi-auto parallel: `net`'s ops sharded by its strategies (train/semi_auto_step.h).
  GradFunction(LossBuilder fn, nn::Cell& net, ParameterList params, ExecOptions opts = {});
  ~GradFunction();
  /// Takes over another GradFunction's programs.
  GradFunction(GradFunction&&) noexcept;

  /// One call's loss and gradients.
  struct Result {
    float loss;                        ///< the scalar loss
    const std::vector<Tensor>& grads;  ///< valid until the next call
  };
  /// Runs forward and backward on `inputs` (data, label, ...); grads[i] belongs to params[i].
  Result operator()(const std::vector<Tensor>& inputs);

  /// The program of the last call (graph for the IR dump, runtime for the trace).
  Program* last_program();
  /// Semi-auto / auto parallel: the last call's whole step (global graph, strategies, local
  /// graph), for train/save_graphs.h's dump; nullptr before the first call or in other modes.
  SemiAutoProgram* semi_auto_program();

 private:
  ProgramCache cache_;
  std::unique_ptr<SemiAutoStep> semi_;  ///< semi-auto parallel: used instead of cache_
  Runtime::Feeds feeds_;
  std::vector<Tensor> grads_;
  size_t grad_count_ = 0;  ///< gradients among a program's fetches (the in-place updates follow)
};

/// Refused (InvalidArgument) in semi-auto parallel mode, which needs the network (below).
GradFunction value_and_grad(LossBuilder fn, ParameterList params, ExecOptions opts = {});
/// Semi-auto parallel (seed 001's loop): each rank computes the global loss and the gradient
/// blocks of its parameter blocks, `net`'s ops sharded by its strategies; the gradients come
/// back summed over each block's replicas, ready for optimizer.step. Call on a rank's thread.
GradFunction value_and_grad(LossBuilder fn, nn::Cell& net, ParameterList params, ExecOptions opts = {});
/// Data parallel in the functional loop: the same, with grad_reducer's bucketed AllReduce
/// compiled into the gradient program, so each bucket is reduced while backward goes on; the
/// gradients come back reduced (do not pass them through grad_reducer again). The reducer's
/// parameters must be `params` (checked, naming the first that differs).
GradFunction value_and_grad(LossBuilder fn, ParameterList params, const nn::DistributedGradReducer& grad_reducer,
                            ExecOptions opts = {});

/// Appends d loss / d params to g; returns the gradient node ids and sets *param_ids to the
/// parameters' nodes. Throws InvalidArgument naming a parameter the loss does not use.
std::vector<int> parameter_gradients(Graph& g, int loss, const ParameterList& params, std::vector<int>* param_ids);

/// Forward only: the outputs of a network (e.g.\ logits for evaluation).
class ForwardFunction {
 public:
  /// `fn` builds the output from the inputs; `params` are bound to the program.
  ForwardFunction(LossBuilder fn, ParameterList params, ExecOptions opts = {});
  /// The output for `inputs`, valid until the next call.
  const Tensor& operator()(const std::vector<Tensor>& inputs) { return cache_.run(inputs)[0]; }

 private:
  ProgramCache cache_;
};

}  // namespace sf
