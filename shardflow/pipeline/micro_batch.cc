#include <shardflow/pipeline/micro_batch.h>

#include <shardflow/core/error.h>
#include <shardflow/core/error_context.h>
#include <shardflow/ops/op_def.h>

namespace sf::pipeline {

MicroBatch::MicroBatch(const StageGraph& stage, const std::vector<Tensor>& params)
    : stage_(stage), values_(stage.graph.size()) {
  SF_ENFORCE(params.size() == stage.param_nodes.size(), InvalidArgument,
             "pipeline: stage {} has {} parameters, {} values given", stage.virtual_stage, stage.param_nodes.size(),
             params.size());
  for (size_t i = 0; i < params.size(); ++i) values_[stage.param_nodes[i]] = params[i];
}

void MicroBatch::run(const std::vector<int>& nodes) {
  for (int id : nodes) {
    const Node& n = stage_.graph.node(id);
    scratch_.clear();
    for (int in : n.inputs) scratch_.push_back(values_[in]);
    Tensor out = n.def->inplace_input >= 0 ? scratch_[n.def->inplace_input] : Tensor::empty(n.shape, n.dtype);
    try {
      n.def->forward(n, scratch_, out);
    } catch (...) {
      // Typed, naming the op once; the stage runtime adds the stage and the action.
      std::rethrow_exception(current_error_with_context(node_label(n)));
    }
    values_[id] = std::move(out);
  }
  scratch_.clear();
}

void MicroBatch::keep_only(const std::vector<int>& ids) {
  std::vector<Tensor> kept(values_.size());
  for (int id : ids) kept[id] = std::move(values_[id]);
  for (int id : stage_.param_nodes) kept[id] = std::move(values_[id]);
  values_ = std::move(kept);
}

std::vector<Tensor> MicroBatch::take(const std::vector<int>& ids) const {
  std::vector<Tensor> out;
  out.reserve(ids.size());
  for (int id : ids) out.push_back(values_[id]);
  return out;
}

MicroBatch::Forward MicroBatch::forward(const std::vector<Tensor>& data, const std::vector<Tensor>& received) {
  SF_ENFORCE(data.size() == stage_.data_inputs.size() && received.size() == stage_.recv_inputs.size(),
             InvalidArgument, "pipeline: stage {} forward takes {} data and {} received values, got {} and {}",
             stage_.virtual_stage, stage_.data_inputs.size(), stage_.recv_inputs.size(), data.size(),
             received.size());
  for (size_t i = 0; i < data.size(); ++i) values_[stage_.data_inputs[i]] = data[i];
  for (size_t i = 0; i < received.size(); ++i) values_[stage_.recv_inputs[i]] = received[i];
  run(stage_.forward);
  Forward out{take(stage_.send_outputs), stage_.loss >= 0 ? values_[stage_.loss] : Tensor()};
  keep_only(stage_.stash_after_forward);
  return out;
}

MicroBatch::Backward MicroBatch::backward(const std::vector<Tensor>& douts) {
  SF_ENFORCE(douts.size() == stage_.dout_inputs.size(), InvalidArgument,
             "pipeline: stage {} backward takes {} output gradients, got {}", stage_.virtual_stage,
             stage_.dout_inputs.size(), douts.size());
  for (size_t i = 0; i < douts.size(); ++i) values_[stage_.dout_inputs[i]] = douts[i];
  run(stage_.backward);
  Backward out{take(stage_.recv_grads), {}};
  if (stage_.split_backward) {
    keep_only(stage_.stash_after_backward);
  } else {
    out.param_grads = take(stage_.param_grads);
    keep_only({});
  }
  return out;
}

std::vector<Tensor> MicroBatch::weight() {
  run(stage_.weight);
  std::vector<Tensor> grads = take(stage_.param_grads);
  keep_only({});
  return grads;
}

size_t MicroBatch::stashed_bytes() const {
  size_t bytes = 0;
  std::vector<char> is_param(values_.size(), 0);
  for (int id : stage_.param_nodes) is_param[id] = 1;
  for (size_t i = 0; i < values_.size(); ++i)
    if (!is_param[i] && values_[i].defined()) bytes += values_[i].nbytes();
  return bytes;
}

}  // namespace sf::pipeline
