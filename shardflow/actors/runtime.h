/// @file
/// Runtime: executes a Graph as an actor dataflow on a CAF 0.17 actor system.
///
/// One actor per op node. An actor fires when all its inputs for a step have arrived and one
/// of its output registers is free; it then hands the register to its consumers by
/// reference and gets it back when every reader has acknowledged it (OneFlow-style
/// registers: memory stays bounded and buffers are reused, nothing is allocated per step).
/// Independent ops (a layer's weight and input gradients) run concurrently on the worker
/// threads. An exception inside an op reaches the caller of run() as an Error naming the op.
///
/// Collective nodes (ops/collective_attrs.h) run on one collective actor per group
/// (actors/collective_actor.h), in the graph's node order, on the comm groups that
/// RuntimeOptions::collectives maps their group names to: one Runtime per rank, each with its
/// rank's context. Every rank must run the same sequence of collective nodes per group (same
/// graph and fetches, up to its own Send/Receive), since the program order is the node order.
///
/// Threading: run() and bind() are called from one thread at a time (the owner's); the
/// actors run on the runtime's own worker threads. CAF is kept out of this header.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <shardflow/actors/collective_context.h>
#include <shardflow/core/tensor.h>
#include <shardflow/ops/graph.h>

namespace sf {

/// How a Runtime runs its graph: worker threads, registers per actor, tracing, comm groups.
struct RuntimeOptions {
  int threads = 1;    ///< actor worker threads (OpenBLAS is single-threaded per call)
  int registers = 2;  ///< output buffers per op actor
  bool trace = false; ///< record every actor firing (see write_trace)
  /// This rank's groups, for graphs with collective nodes (a group missing here is taken from
  /// the calling thread's rank, actors/collective_context.h); checked when the runtime is built.
  CollectiveContext collectives = {};
};

/// Executes a Graph as an actor dataflow, one actor per op node, step after step.
class Runtime {
 public:
  /// `g` must outlive the runtime. Only the nodes the fetches need get an actor. Throws
  /// InvalidArgument naming the node if a collective's group cannot be found or has another
  /// size than the node's group_size.
  Runtime(const Graph& g, std::vector<int> fetches, RuntimeOptions opts = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Binds a Parameter (or Input) node to a tensor held by reference across steps; its
  /// elements may change between steps (an optimizer update), never during one.
  void bind(int node_id, const Tensor& t);

  /// The values of a step's Input nodes: (node id, tensor) pairs.
  using Feeds = std::vector<std::pair<int, Tensor>>;
  /// Runs one step with these Input values (checked before anything runs); returns the
  /// fetched tensors, valid until the next run(). Throws the first op error as sf::Error.
  const std::vector<Tensor>& run(const Feeds& feeds);

  /// Fills the feeds of the coming step; false ends run_steps().
  using NextFn = std::function<bool(Feeds& feeds)>;
  /// Reads the fetched results of the step just finished.
  using DoneFn = std::function<void(const std::vector<Tensor>& results)>;
  /// Runs steps back to back inside the actor system until next() returns false: next()
  /// fills the feeds of the coming step, done() reads the results of the step just finished.
  /// Both run on a worker thread, one call at a time, in order; run_steps() returns when
  /// next() returns false and rethrows the first exception of an op, next() or done().
  void run_steps(const NextFn& next, const DoneFn& done);

  /// The number of actor worker threads.
  int threads() const;
  /// The number of steps started so far, by run() and run_steps().
  int64_t steps() const;
  /// Number of op actors (op nodes) this runtime spawned, collective actors not counted.
  int actor_count() const;
  /// Writes the recorded actor events as a Chrome/Perfetto trace (needs options.trace).
  void write_trace(const std::string& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sf
