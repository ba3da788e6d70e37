/// @file
/// StageProgram: what one rank runs of a pipeline, as one graph for the actor runtime.
///
/// Ranks form `stages` consecutive groups of `per_stage` devices (MindSpore's order: world rank
/// r is stage r / per_stage, local rank r % per_stage on its stage's device matrix). Each
/// virtual stage's forward graph (pipeline/stage_split.h) is sharded over its stage's devices
/// by the network's strategies (ops without one get the data-parallel default;
/// parallel/sharding/graph_sharding.h) and this rank's local graph is built from it, as semi-auto
/// parallel does for a whole network. The rank's chunks (virtual stages c·p + stage) go into
/// one graph, each followed by:
///
/// - its transfers: a value crossing a stage boundary is carried in one layout on the stage that
///   makes it and consumed in another on the next, so the redistribution plan between the two
///   device groups (parallel/reshard_plan.h) is run on the wire: each sending rank slices the
///   pieces a receiving rank needs and Sends each straight to it; the receiver Receives its
///   pieces and joins them into its block (Concat). When the layouts agree, that is one
///   whole-block Send to the rank of the same local index. Gradients go back the same way;
/// - its backward: the gradient of the objective scaled by 1/per_stage (every rank of a stage
///   computes the whole objective; train/semi_auto_step.h says why the replicas' shares then
///   sum to the gradient), with the gradient of a received value summed over the ranks that
///   hold the same block before it is sent back.
///
/// Phases: per chunk F (forward and its sends), B (input gradients and their sends, and the
/// weight gradients unless split) and W (weight gradients, split backward only) — node sets
/// found by reachability; the Receives (and their virtual inputs) belong to no phase: they are
/// posted for every micro-batch when a step begins and run in the schedule's order. The
/// collectives of every group run in the order the schedule's action list gives, the same on
/// every rank of the group, and a value a later phase reads keeps as many registers as the
/// chunk has micro-batches in flight at most.
///
/// Threading: built once per rank and batch shape, then read-only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <shardflow/actors/runtime.h>
#include <shardflow/ops/graph.h>
#include <shardflow/parallel/sharding/graph_sharding.h>
#include <shardflow/parallel/sharding/op_strategy.h>
#include <shardflow/pipeline/schedule.h>
#include <shardflow/pipeline/stage_split.h>

namespace sf::pipeline {

/// Phase kinds within a chunk: phase id = chunk * kPhaseKinds + kind.
enum PhaseKind { kPhaseForward = 0, kPhaseBackward = 1, kPhaseWeight = 2, kPhaseKinds = 3 };

/// The names the transfer collectives use; a runtime maps each to the world group.
inline constexpr const char* kSendGroup = "pipeline/send";
/// Receives of activations (forward), on their own collective actor.
inline constexpr const char* kRecvActivationGroup = "pipeline/recv_activation";
/// Receives of output gradients (backward), on their own collective actor.
inline constexpr const char* kRecvGradientGroup = "pipeline/recv_gradient";

/// One rank's pipeline program (see the file comment).
struct StageProgram {
  /// One of the rank's chunks (a virtual stage).
  struct Chunk {
    int virtual_stage = 0;                     ///< chunk * stages + stage
    std::vector<int> data_inputs;              ///< Input nodes fed from the dataset
    std::vector<std::string> data_names;       ///< their dataset column names
    std::vector<TensorLayout> data_layouts;    ///< how each column is cut over the stage
    int loss = -1;                             ///< the local loss (last virtual stage only)
    std::vector<std::string> param_names;      ///< the chunk's parameters
    std::vector<int> param_nodes;              ///< their Parameter nodes
    std::vector<int> param_grads;              ///< their gradient blocks (this micro-batch's)
    std::vector<TensorLayout> param_layouts;   ///< how each is cut over the stage
    std::vector<Shape> param_shapes;           ///< their whole shapes
    std::vector<int> state_updates;            ///< in-place nodes (BatchNorm's moving statistics)
    std::vector<int> recv_nodes;               ///< Receive nodes of activations (phase -1)
    std::vector<int> dout_recv_nodes;          ///< Receive nodes of output gradients (phase -1)
  };

  int stages = 1;               ///< pipeline stages (ranks' groups)
  int per_stage = 1;            ///< devices per stage
  int stage = 0;                ///< this rank's stage: rank / per_stage
  int local_rank = 0;           ///< this rank's place in its stage: rank % per_stage
  Graph graph;                  ///< every chunk of this rank
  std::vector<Chunk> chunks;    ///< by chunk index (virtual stage = chunk * stages + stage)
  std::vector<GraphSharding> shardings;  ///< every virtual stage's, by virtual stage
  std::vector<int> fetches;     ///< what the runtime delivers: grads, loss, sends, state updates
  StreamSpec stream;            ///< phases, registers and collective order (on_fetch unset)
  /// Groups of the stage's collectives: name -> world ranks. The transfer groups are not here.
  std::map<std::string, std::vector<int>> groups;
  /// Per Send or Receive node id: the action kind it serves and its chunk.
  std::map<int, std::pair<ActionKind, int>> transfers;
  int64_t sent_bytes = 0;       ///< bytes this rank sends per micro-batch (both directions)
  int64_t received_bytes = 0;   ///< bytes it receives per micro-batch
};

/// How build_stage_program runs.
struct StageProgramOptions {
  int per_stage = 1;               ///< devices per stage
  bool split_backward = false;     ///< B and W separate (ZB-H1)
  /// Off: the gradient is summed, not averaged, over the blocks the batch is cut into (the
  /// data-parallel replicas; MindSpore's gradients_mean=False).
  bool gradients_mean = true;
};

/// Rank `rank`'s program for these virtual stages (all of them: neighbours' layouts are needed)
/// under the lowered `schedule` (with transfers), the network's strategies `table` (entries
/// name ops of any stage). Throws InvalidArgument, before anything runs, for a strategy that
/// does not fit its stage, a table entry naming no op, or a parameter shared by two stages in
/// different layouts.
StageProgram build_stage_program(const std::vector<StageGraph>& stages, const Schedule& schedule,
                                 const StrategyTable& table, int rank, const StageProgramOptions& opts);

}  // namespace sf::pipeline
