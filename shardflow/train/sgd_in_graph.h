// Puts plain SGD steps into the training graph (MindSpore's TrainOneStepCell compiles the
// optimizer into the step the same way): each parameter is updated by an in-place op as soon
// as its gradient is ready, concurrently with the rest of the backward pass, and a weight
// gradient that is a MatMul is fused with its update (no gradient buffer, one pass over W).
#pragma once

#include <vector>

#include <shardflow/ops/graph.h>
#include <shardflow/train/grad_buckets.h>

namespace sf {

// params[i] is a Parameter node, grads[i] its gradient. Returns the last update node of
// each chain of updates, one or more per parameter (fetch them all to run the step). Each update waits for every other reader of its
// parameter in this step, so no op reads a half-updated parameter.
// `wholes` maps the Input nodes fed with the row blocks of a batch (in block order) to the
// Input fed with the whole batch, which then replaces their concatenation.
struct WholeInput {
  std::vector<int> parts;
  int whole;
};
std::vector<int> append_sgd_updates(Graph& g, const std::vector<int>& params, const std::vector<int>& grads,
                                    float learning_rate, const std::vector<WholeInput>& wholes = {});

// Data parallel: each parameter is updated by ApplyGradientDescent from its reduced gradient,
// read in place from its bucket (train/grad_buckets.h). The weight gradient's GEMM cannot be
// fused with the update here, since the update needs every rank's gradient first: the GEMM
// writes a gradient buffer that the bucket's AllReduce reads. The same waits on the other
// readers of each parameter as above.
std::vector<int> append_reduced_sgd_updates(Graph& g, const std::vector<int>& params, const ReducedGradients& reduced,
                                            float learning_rate);

}  // namespace sf
