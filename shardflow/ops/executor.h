// Executor: runs a Graph node by node on the calling thread.
//
// This is the plain 1-device reference path that tests compare against (gradient checks,
// the actor runtime's results). Output buffers are allocated once and reused by every run.
// Not thread-safe; one run at a time.
#pragma once

#include <vector>

#include <shardflow/core/tensor.h>
#include <shardflow/ops/graph.h>

namespace sf {

class Executor {
 public:
  // `g` must outlive the executor. Only the nodes the fetches need are run.
  Executor(const Graph& g, std::vector<int> fetches);

  // Binds the value of a source node (Input or Parameter); checked against its shape and dtype.
  // The tensor is held by reference: later changes to its elements are seen by the next run.
  void bind(int node_id, const Tensor& t);

  // Runs the graph; returns the fetched values, valid until the next run.
  const std::vector<Tensor>& run();

 private:
  const Graph& g_;
  std::vector<int> fetches_;
  std::vector<int> order_;
  std::vector<Tensor> values_;
  std::vector<Tensor> results_;
  std::vector<Tensor> scratch_inputs_;
};

}  // namespace sf
