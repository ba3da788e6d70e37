// One micro-batch on one virtual stage: runs the stage graph's F, B and W phases on it and
// keeps, between them, only the values the later phases read (its stash). A stage actor
// owns one per micro-batch in flight; pipeline/stage_actors.h runs it as an actor.
//
// Threading: one phase at a time (the actor's mailbox serialises them).
#pragma once

#include <vector>

#include <shardflow/core/tensor.h>
#include <shardflow/pipeline/stage_split.h>

namespace sf::pipeline {

class MicroBatch {
 public:
  // `params[i]` is the value of stage.param_nodes[i]; both must outlive the micro-batch.
  MicroBatch(const StageGraph& stage, const std::vector<Tensor>& params);

  struct Forward {
    std::vector<Tensor> sends;  // per stage.send_outputs
    Tensor loss;                // last stage only
  };
  // `data` per stage.data_inputs, `received` per stage.recv_inputs.
  Forward forward(const std::vector<Tensor>& data, const std::vector<Tensor>& received);

  struct Backward {
    std::vector<Tensor> input_grads;  // per stage.recv_inputs, to send back
    std::vector<Tensor> param_grads;  // per stage.param_nodes; empty when W computes them
  };
  // `douts` per stage.send_outputs (empty on the last stage).
  Backward backward(const std::vector<Tensor>& douts);
  // The weight gradients (split backward only), per stage.param_nodes.
  std::vector<Tensor> weight();

  // Bytes of the values kept for later phases now.
  size_t stashed_bytes() const;

 private:
  void run(const std::vector<int>& nodes);
  void keep_only(const std::vector<int>& ids);
  std::vector<Tensor> take(const std::vector<int>& ids) const;

  const StageGraph& stage_;
  std::vector<Tensor> values_;  // by node id of stage_.graph
  std::vector<Tensor> scratch_;
};

}  // namespace sf::pipeline
