// ShardingProblem: a global graph as the strategy searches see it — its ops, the edges between
// them, each op's candidate strategies (candidates.h), and what a strategy costs in
// redistribution on those edges: the bytes per rank the planner's cheapest plan moves
// (parallel/redistribution_planner.h) to carry a producer's value, in the layout it is
// carried in, to the layout a consumer needs. Plans are cached by layouts and shape, as a
// search asks the same question many times.
//
// Sources: a Parameter is generated in whatever layout its consumer needs and a Fill is the
// same on every rank, so their edges cost nothing. An Input's edge costs what the dataset
// strategy makes it cost: under "data_parallel" the batch arrives split along dim 0 over every
// device, under "full_batch" every rank holds all of it (any cut is a local slice, free).
//
// Threading: one thread at a time; `g` must outlive it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <shardflow/ops/graph.h>
#include <shardflow/parallel/propagation/candidates.h>

namespace sf {

class ShardingProblem {
 public:
  // An edge: `producer`'s value is input `slot` of `consumer`.
  struct Edge {
    int producer = -1;
    int consumer = -1;
    int slot = 0;
  };
  // Sharding per node id: the decided ones, null for sources and undecided ops.
  using Choice = std::vector<const OpSharding*>;

  // The nodes `outputs` need; `dataset_strategy` is "data_parallel" or "full_batch".
  ShardingProblem(const Graph& g, const std::vector<int>& outputs, int64_t devices, std::string_view dataset_strategy);

  const Graph& graph() const { return g_; }
  int64_t devices() const { return devices_; }
  // Op node ids, ascending (a topological order).
  const std::vector<int>& ops() const { return ops_; }
  bool is_op(int id) const { return is_op_.at(id); }
  const std::vector<Shape>& input_shapes(int op) const { return shapes_.at(op); }
  // Built on first use.
  const std::vector<Candidate>& candidates(int op);
  const std::vector<Edge>& in_edges(int op) const { return in_.at(op); }   // one per input
  const std::vector<Edge>& out_edges(int op) const { return out_.at(op); } // consumers that are ops
  // The ops `op` reads from or feeds, each once, ascending.
  std::vector<int> neighbours(int op) const;

  // Bytes per rank the cheapest plan moves to carry `e`'s value from `from` to `to`.
  double bytes(const Edge& e, const TensorLayout& from, const TensorLayout& to);
  // The redistribution bytes of `op` sharded as `s`: over its inputs (from decided producers
  // and priced sources) and its outputs (to decided consumers).
  double edge_bytes(int op, const OpSharding& s, const Choice& chosen);
  // A Choice with nothing decided.
  Choice none() const { return Choice(g_.size(), nullptr); }

 private:
  const Graph& g_;
  int64_t devices_;
  std::vector<int> ops_;
  std::vector<bool> is_op_;
  std::map<int, std::vector<Shape>> shapes_;
  std::map<int, std::vector<Edge>> in_, out_;
  std::map<int, std::vector<Candidate>> candidates_;
  std::map<int, TensorLayout> source_layout_;  // Inputs under data_parallel
  std::map<std::string, double> plan_bytes_;
};

}  // namespace sf
