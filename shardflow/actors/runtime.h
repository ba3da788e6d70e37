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
/// Streaming (pipelines, StreamSpec): instead of whole steps, the owner admits one *phase* of
/// one step at a time (a pipeline's F, B or W of a micro-batch; a step is a micro-batch), and
/// each fetched value goes to a callback as soon as it is made. A phase's entry nodes wait for
/// its admission, so the owner decides the order phases run in; nodes of no phase (a pipeline's
/// posted-ahead receives) run as soon as a cycle begins. Collectives run in the order the spec
/// gives per group, and a node may keep more registers than the default (a value a later phase
/// reads stays in its producer's register until then: the register count bounds the steps in
/// flight).
///
/// Threading: run(), bind() and the stream calls are made from one thread at a time (the
/// owner's); the actors run on the runtime's own worker threads. CAF is kept out of this header.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <shardflow/actors/collective_context.h>
#include <shardflow/core/tensor.h>
#include <shardflow/ops/graph.h>

namespace sf {

/// How a streaming Runtime runs (see the file comment). Node ids are the graph's.
struct StreamSpec {
  int64_t cycle = 1;  ///< steps per cycle (a pipeline's micro-batches per training step)
  int phases = 0;     ///< phase ids are 0 .. phases-1
  /// Per node id: its phase, or -1 for a node that runs once per step of a cycle from the
  /// cycle's start on (it must have no Input to feed).
  std::vector<int> phase_of;
  /// Per node id: its register count, 0 for RuntimeOptions::registers.
  std::vector<int> registers;
  /// Per group name: the order of its collective nodes over a cycle, as (step in cycle, node id);
  /// every collective node of the group once per step of the cycle.
  std::map<std::string, std::vector<std::pair<int64_t, int>>> collective_order;
  /// Called with (fetch index, step, value) on a worker thread as each fetched value is made;
  /// the value is valid during the call only (its register is reused after).
  std::function<void(int, int64_t, const Tensor&)> on_fetch;
  /// Called after each collective node ran: (node id, step, start ns, end ns) on
  /// TraceRecorder's clock (actors/trace.h), on the group's thread; may be null.
  std::function<void(int, int64_t, int64_t, int64_t)> on_collective;
};

/// How a Runtime runs its graph: worker threads, registers per actor, tracing, comm groups.
struct RuntimeOptions {
  int threads = 1;    ///< actor worker threads (OpenBLAS is single-threaded per call)
  int registers = 2;  ///< output buffers per op actor
  bool trace = false; ///< record every actor firing (see write_trace)
  /// This rank's groups, for graphs with collective nodes (a group missing here is taken from
  /// the calling thread's rank, actors/collective_context.h); checked when the runtime is built.
  CollectiveContext collectives = {};
  /// Set: the runtime streams (see the file comment) and run()/run_steps() refuse.
  std::shared_ptr<const StreamSpec> stream = nullptr;
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

  /// Streaming: begins a cycle of StreamSpec::cycle steps; the nodes of no phase start on
  /// every step of it. The previous cycle's phases must all have been waited for.
  void begin_cycle();
  /// Streaming: admits phase `phase` of step `step_in_cycle` of the current cycle, feeding
  /// these Input values (checked first); returns at once.
  void admit(int phase, int64_t step_in_cycle, const Feeds& feeds);
  /// Streaming: blocks until every node of that phase and step has run; rethrows the first
  /// error of any op.
  void wait(int phase, int64_t step_in_cycle);
  /// Streaming: when the first node of that phase and step began to run (TraceRecorder's clock,
  /// actors/trace.h), -1 if none has; valid after wait() until the next begin_cycle().
  int64_t phase_started_ns(int phase, int64_t step_in_cycle) const;

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
