/// @file
/// Splits a network's training graph (one micro-batch: forward and loss, on the micro-batch's
/// global shapes) into the forward programs of its pipeline stages. Each virtual stage gets its
/// own graph: the nodes assigned to it, copies of the sources it reads (data inputs, parameters
/// — a parameter read by several stages is copied into each), an Input per value it receives
/// from the stage before, and the *objective* whose gradient is the stage's vector-Jacobian
/// product: the loss on the last stage, elsewhere sum_k ReduceSum(output_k * dout_k) with dout_k
/// an Input fed from the stage after. Node names are the original graph's, so the network's
/// strategies (shard(), strategy files) name a stage's ops as they name the network's.
///
/// A stage graph is global within its stage: pipeline/stage_program.h shards it over the
/// stage's devices, adds the transfers and derives the backward and the phases per rank.
///
/// A value made on stage a and read on stage c > a + 1 is relayed: every stage in between
/// receives it and sends it on (and its gradient back), so stages only talk to neighbours.
///
/// Threading: built once, then read-only.
#pragma once

#include <string>
#include <vector>

#include <shardflow/ops/graph.h>

namespace sf::pipeline {

/// The program of one virtual stage: its graph and the roles of its nodes.
struct StageGraph {
  int virtual_stage = 0;  ///< its index among the virtual stages
  Graph graph;            ///< the stage's nodes, its sources' copies, and its backward
  /// Input nodes fed from the dataset (by the original graph's input names).
  std::vector<int> data_inputs;
  std::vector<std::string> data_names;  ///< the input name of each data_inputs entry
  std::vector<int> recv_inputs;   ///< from the stage before, in its send order
  std::vector<int> send_outputs;  ///< to the stage after
  std::vector<int> dout_inputs;   ///< gradient of each send output, fed from the stage after
  int loss = -1;                  ///< the last stage's scalar loss; -1 elsewhere
  std::vector<int> param_nodes;   ///< Parameter nodes, in the original graph's order
  std::vector<std::string> param_names;  ///< the parameter name of each param_nodes entry
  /// In-place nodes of the forward (BatchNorm's moving statistics): run with F, read by none.
  std::vector<int> state_updates;
  int objective = -1;  ///< the scalar whose gradient the stage's backward computes
};

/// `stage_of_node[i]` is node i's virtual stage, or -1 to infer it: the latest stage among its
/// inputs, or for a source the earliest stage that reads it. Every virtual stage in
/// [0, virtual_stages) must own at least one node.
/// Throws InvalidArgument naming the node when a stage reads a value from a later stage, and
/// naming the stage when one is empty.
/// The program of every virtual stage of graph `g`, whose scalar loss is node `loss`.
std::vector<StageGraph> split_stages(const Graph& g, int loss, std::vector<int> stage_of_node, int virtual_stages);

}  // namespace sf::pipeline
