/// @file
/// build_local_graph: one rank's part of a sharded global graph (graph_sharding.h) — the graph
/// that rank runs, with local shapes and the inserted communication.
///
/// Each source becomes a source of its local shape under the same name (an Input is fed the
/// rank's slice of the global batch, a Parameter is bound to the rank's slice of the weight);
/// each op becomes, in order: the redistribution of each input into the layout the op needs
/// (parallel/redistribution_executor.h; the ops named "<op name>/in<i>/..."), the op itself on
/// local shapes under its global name, a scaling by 1/blocks for a mean over split loops, and
/// the redistribution of its result to the layout it is carried in ("<op name>/out/...": the
/// AllReduce of a partial sum, or the ReduceScatter an out_strategy asks for). A value
/// redistributed to one layout for two consumers is redistributed once.
///
/// Every collective is a graph op with a gradient, so ops/autodiff.h differentiates the local
/// graph into the backward with the collectives' gradients.
///
/// Threading: one thread per call; the result is a plain value.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <shardflow/ops/graph.h>
#include <shardflow/parallel/sharding/graph_sharding.h>

namespace sf {

/// One rank's part of a sharded global graph.
struct LocalGraph {
  /// A source node (Input or Parameter) in both graphs.
  struct Source {
    int global = -1;  ///< node id in the global graph
    int local = -1;   ///< node id here
    TensorLayout layout;  ///< how the global value is spread: this rank holds its slice
  };

  Graph graph;   ///< the graph this rank runs
  int rank = 0;  ///< the rank it is for
  std::vector<int> value;            ///< by global node id: the local node of its carried value, or -1
  std::vector<Source> inputs;        ///< Input nodes, in global node order
  std::vector<Source> parameters;    ///< Parameter nodes, in global node order
  std::map<std::string, std::vector<int>> groups;  ///< every group its collectives name -> world ranks

  /// Records a group a collective of this graph runs on; refuses one name for two rank lists.
  void add_group(const std::string& name, const std::vector<int>& ranks);
};

/// Rank `rank`'s part of `global`, sharded as `sharding` says.
LocalGraph build_local_graph(const Graph& global, const GraphSharding& sharding, int rank);

}  // namespace sf
