/// @file
/// NodeMeterScope: attributes the tensor memory of chosen op nodes to memory meters
/// (core/memory_meter.h), to measure what a region of a network holds per rank.
///
/// While a scope lives, every Runtime built on the calling thread asks its chooser, once per op
/// node as it spawns the node's actor, for the meter of that node (null: none). The actor then
/// makes that meter current while it allocates its output registers and around every kernel
/// call, so the node's registers and whatever its kernel allocates are charged to it; tensors
/// handed to consumers share the registers' storage and cost nothing more. Not charged: bound
/// parameters, and a collective node's result, which comm makes on the group's thread (such a
/// node's actor keeps no buffer of its own).
///
/// Why a thread-scoped chooser rather than a RuntimeOptions field: Model, the semi-auto and
/// pipeline steps build their runtimes deep inside train(), out of the caller's reach, and a
/// process of virtual ranks builds each rank's runtime on that rank's thread, so a scope set on
/// a rank's thread reaches exactly that rank's runtimes and no other's.
///
/// Threading: the scope belongs to the thread that made it; the chooser is called on that
/// thread, from the Runtime constructor only. Lifetime: the meters it returns are shared with
/// the actors and the storages charged to them, so they may outlive the scope and the runtime.
#pragma once

#include <functional>
#include <memory>

#include <shardflow/core/memory_meter.h>
#include <shardflow/ops/graph.h>

namespace sf {

/// Chooses the meter an op node's allocations are charged to; null for none.
using NodeMeterFn = std::function<std::shared_ptr<MemoryMeter>(const Node&)>;

/// Makes a chooser current on the calling thread for the scope's lifetime (see the file
/// comment), restoring the previous one after; scopes nest, and an empty chooser turns it off.
class NodeMeterScope {
 public:
  /// Makes `choose` the chooser of the Runtimes built on the calling thread.
  explicit NodeMeterScope(NodeMeterFn choose);
  /// Restores the chooser that was current before.
  ~NodeMeterScope();
  NodeMeterScope(const NodeMeterScope&) = delete;
  NodeMeterScope& operator=(const NodeMeterScope&) = delete;

 private:
  NodeMeterFn choose_;
  const NodeMeterFn* previous_;
};

/// The meter the calling thread's chooser gives `n`; null when there is no chooser or it gives none.
std::shared_ptr<MemoryMeter> node_meter(const Node& n);

}  // namespace sf
