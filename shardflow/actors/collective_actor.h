// The collective actor: one per (group, rank), it runs that group's collective nodes
// (ops/collective_attrs.h) for one Runtime, in program order.
//
// Why program order: dataflow may hand independent collective nodes their inputs in different
// orders on different ranks, and a group pairs its collectives by call order (comm/group.h),
// so two ranks would otherwise pair different AllReduces. The runtime gives each collective
// node of the group a static index, its place in the graph's node order (a topological order
// that every rank's copy of the graph shares), and this actor runs the requests strictly in
// (step, index) order, holding back any that arrive early. Every collective node of the group
// sends exactly one request per step.
//
// A pipeline runs phases of different micro-batches (steps) in the order of its schedule, not
// step after step, so a streaming Runtime (actors/runtime.h, StreamSpec) gives the order
// explicitly: one cycle of (step in cycle, index) pairs, repeated with the step advanced by the
// cycle's length. Every rank of a group derives it from the same schedule.
//
// Threading: spawned detached (its own thread), because a collective blocks until every rank
// has joined; N virtual ranks in one process would deadlock if their collectives blocked the
// workers of a shared scheduler. Requests come from the group's op actors; each reply goes back
// to the requester, carrying the error text if the collective threw, so the op actor can
// report it naming the node. A failed collective does not stop the actor: later ones run (and
// fail at once if the group is marked failed, comm/group.h).
#pragma once

#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include <shardflow/actors/messages.h>
#include <shardflow/comm/group.h>

namespace sf {

struct CollectiveActorSpec {
  comm::Group group;
  std::chrono::milliseconds timeout{0};
  int32_t count = 0;  // collective nodes of the group, indices 0 .. count-1
  // The program order over one cycle of `cycle` steps: (step in cycle, index) pairs. Empty: every
  // index in turn, once per step (cycle 1).
  std::vector<std::pair<int64_t, int32_t>> order;
  int64_t cycle = 1;
  // Called after each collective ran (node, step, start and end on TraceRecorder's clock), or null.
  std::function<void(const Node&, int64_t, int64_t, int64_t)> on_run;
};

struct CollectiveActorState {
  CollectiveActorSpec spec;
  std::map<std::pair<int64_t, int32_t>, CollectiveRequest> early;  // by (step, index)
  size_t next = 0;         // position in spec.order
  int64_t cycle_base = 0;  // the first step of the current cycle
  static inline const char* name = "sf.collective";
};

caf::behavior collective_actor(caf::stateful_actor<CollectiveActorState>* self, CollectiveActorSpec spec);

}  // namespace sf
