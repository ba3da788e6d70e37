// StepEstimate: what one training step of a sharded graph costs a rank, from the sharding alone
// (parallel/sharding/graph_sharding.h) — no rank is started, nothing runs. It is the cost
// model of the auto-parallel search (parallel/auto_search.h) and the figures of a dry run
// (parallel/dry_run.h).
//
//   parameter bytes   every Parameter's block (its layout's local shape)
//   activation bytes  every op's local result (forward; the backward frees them as it goes)
//   collective bytes  per kind, sent per rank per step: the forward's redistribution steps
//                     (each input's plan and the resolution of a partial result), the
//                     backward's, which are their adjoints and send as much (AllReduce <->
//                     AllReduce, AllGather <-> ReduceScatter, AlltoAll <-> AlltoAll, a slice
//                     <-> zero padding), and the gradient AllReduce of each parameter block
//                     over its replicas, 2(n-1)/n of the block on a ring of n.
// Every rank holds blocks of one size and runs groups of one size, so the figures are those
// of every rank.
//
// Threading: a pure function; the result is a plain value.
#pragma once

#include <map>
#include <string>

#include <shardflow/parallel/sharding/graph_sharding.h>

namespace sf {

struct StepEstimate {
  double parameter_bytes = 0;
  double activation_bytes = 0;
  std::map<std::string, double> collective_bytes;  // "AllReduce", ..., and "AllReduce (gradients)"

  double communication_bytes() const;
  double memory_bytes() const { return parameter_bytes + activation_bytes; }
  // One line per figure.
  std::string str() const;
};

// The bytes of the block of node `n`'s value a rank holds in `layout`.
double local_bytes(const TensorLayout& layout, const Node& n);

StepEstimate estimate_step(const Graph& g, const GraphSharding& sharding);

}  // namespace sf
