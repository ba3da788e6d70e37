/// @file
/// CollectiveContext: what a Runtime needs to run the collective nodes of one rank's graph —
/// the comm::Group behind each group name the graph's nodes carry (ops/collective_attrs.h),
/// and the per-operation timeout of every collective they run.
///
/// N virtual ranks in one process are N Runtimes, each built with its own rank's context
/// (its endpoint of make_inproc_world(n), comm/inproc/transport.h); several processes are
/// one Runtime each, with the groups of that process's rank. A group the context lacks is
/// looked up in the calling thread's rank (comm/rank_context.h: after sf::comm::init(), the
/// world and the groups made by create_group()), so a Runtime built on a rank's thread needs
/// no context at all.
///
/// Threading: a plain value, copied into the Runtime; comm::Group handles are shared and
/// thread-safe (comm/group.h).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/comm/transport.h>
#include <shardflow/ops/collective_attrs.h>

namespace sf {

/// The groups and the timeout the collective nodes of one rank's graph run with.
struct CollectiveContext {
  std::map<std::string, comm::Group> groups;  ///< by the name the graph's "group" attrs use
  std::chrono::milliseconds timeout = comm::default_timeout();  ///< of every collective

  /// Adds `group` under its own name; InvalidArgument if undefined or the name is taken.
  CollectiveContext& add(comm::Group group);
  /// The group named `name`, or nullptr.
  const comm::Group* find(const std::string& name) const;
  /// The group named `name` here, else the calling thread's rank's; InvalidArgument naming
  /// `what` (the node that needs it) if neither has it.
  comm::Group resolve(const std::string& name, const std::string& what) const;
};

/// The context holding the world group of `transport`'s world.
CollectiveContext world_context(std::shared_ptr<comm::Transport> transport);

/// How a graph names `group`: CollectiveBuilder(gb, group_ref(g)) builds collectives on it.
GroupRef group_ref(const comm::Group& group);

}  // namespace sf
