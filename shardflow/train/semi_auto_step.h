/// @file
/// SemiAutoStep: one rank's training step in semi-auto parallel mode (MindSpore's
/// SEMI_AUTO_PARALLEL), built per batch signature and cached like ProgramCache.
///
/// Building it: the network and loss are built once on global shapes (the global graph), every
/// op is sharded by its strategy (Cell::strategies(), with the context's strategy_ckpt_load_file
/// over them; the default for the others; parallel/sharding/graph_sharding.h; in auto parallel mode the strategies the search finds
/// from them, parallel/auto_parallel.h), and this rank's local graph is built from it
/// (parallel/sharding/local_graph.h). The network's parameters are then sharded: each keeps
/// only this rank's block, generated from the initializer (Parameter::shard), BatchNorm's moving
/// statistics included; their in-place updates are fetched after the gradients, so every step
/// runs them (on the layout of their BatchNorm, graph_sharding.h). Autodiff appends
/// the backward, and each parameter's gradient is summed over the ranks that hold the same
/// block (MindSpore's mirror AllReduce). With the context's strategy_ckpt_save_file, rank 0
/// writes every op's strategy there; with its save_graphs, each rank writes its parallel IR
/// (train/save_graphs.h) once the program is built.
///
/// Why the sum over every replica, repeat axis included, is right: each rank's local graph
/// computes the whole (replicated) loss, and its backward is the exact adjoint of its forward —
/// a collective's gradient is its transpose (AllReduce <-> AllReduce, AllGather <->
/// ReduceScatter, a slice <-> zero padding). Seeding each rank's loss gradient with 1/N (N
/// devices) makes the ranks' backward passes together the gradient of N * (L / N) = L, in
/// which every copy of a parameter block carries the share of the gradient that flowed through
/// it. The gradient of the block is the sum of its copies' shares: over data-parallel axes they
/// are the batch blocks' contributions, over a repeat axis they are each 1/r of the whole, and
/// the one AllReduce over the replica group covers both. docs/operator_parallel.md has the
/// argument at length; the equivalence tests (tests/parallel/) check it against 1 device.
///
/// Feeding: every rank is given the global batch (the dataset is read as on 1 device, as seed
/// 001 does) and is fed its block of each column (a view when only the batch dim is split).
///
/// Construct and use it on a thread bound to a rank (comm/rank_context.h); with no rank bound
/// it runs as 1 device. Threading: one thread at a time.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/comm/group.h>
#include <shardflow/parallel/propagation/strategy_search.h>
#include <shardflow/parallel/sharding/local_graph.h>
#include <shardflow/train/cell.h>
#include <shardflow/train/clip_grad.h>
#include <shardflow/train/program.h>
#include <shardflow/train/value_and_grad.h>

namespace sf {

/// What SemiAutoStep builds for one global batch signature.
struct SemiAutoProgram {
  Graph global;            ///< network and loss on global shapes
  StrategySearch search;   ///< auto parallel: the strategies found and why (empty in semi-auto)
  GraphSharding sharding;  ///< every op's strategy and layouts
  LocalGraph local;        ///< this rank's part; its graph is moved into program.graph
  int forward_nodes = 0;   ///< program.graph's first nodes are the local forward; the backward follows
  Program program;         ///< fetches: loss, then each parameter's gradient block
  /// Where the gradient blocks lie (train/clip_grad.h): per parameter, whether this rank is the
  /// lowest of the ranks holding its block, and the world group. Model gives it to the optimizer,
  /// whose gradient clipping then counts every block once over the world.
  nn::GradPlacement grad_placement;
};

/// One rank's training step in semi-auto (or auto) parallel mode (see the file comment).
class SemiAutoStep {
 public:
  /// `loss` builds the scalar loss from the batch's columns; `params` (the optimizer's) get
  /// gradients. `net` must outlive this.
  SemiAutoStep(nn::Cell& net, LossBuilder loss, ParameterList params, ExecOptions opts);

  /// The program for this global batch's signature, built on first use.
  Program& get(const std::vector<Tensor>& batch);
  /// The most recently used one, or nullptr.
  SemiAutoProgram* last() { return last_; }

 private:
  std::unique_ptr<SemiAutoProgram> build(const std::vector<Tensor>& batch);
  comm::Group group(const std::string& name, const std::vector<int>& ranks);

  nn::Cell& net_;
  LossBuilder loss_;
  ParameterList params_;
  ExecOptions opts_;
  std::map<std::string, std::unique_ptr<SemiAutoProgram>> programs_;
  SemiAutoProgram* last_ = nullptr;
  std::map<std::string, comm::Group> groups_;  ///< one per name, shared by the programs
};

}  // namespace sf
