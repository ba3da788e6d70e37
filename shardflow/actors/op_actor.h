// The op actor: runs one graph node's kernel each time a full set of inputs is present
// and one of its output registers is free (see runtime.h for the protocol).
// A collective node's actor sends its inputs to the group's collective actor instead
// (actors/collective_actor.h) and finishes the firing when the result comes back; it fires
// once at a time, and acknowledges its producers only then, since the collective reads their
// registers.
#pragma once

#include <caf/actor.hpp>
#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <deque>
#include <vector>

#include <shardflow/actors/messages.h>
#include <shardflow/actors/step_state.h>
#include <shardflow/core/memory_meter.h>
#include <shardflow/ops/graph.h>

namespace sf {

struct OpActorSpec {
  const Node* node = nullptr;
  // Per input slot: index of its queue, or -1 if the value is bound (a Parameter).
  std::vector<int> queue_of_slot;
  int queues = 0;  // dynamic inputs, plus one tick (or gate) queue for an op with none or a gated one
  struct Consumer {
    caf::actor actor;
    int32_t slot;
  };
  std::vector<Consumer> consumers;
  std::vector<int> fetch_indices;
  const std::vector<caf::actor>* actors = nullptr;  // by node id, to acknowledge producers
  int registers = 2;
  int phase = -1;  // streaming: the node's phase, counted down in shared->phase_left as it fires
  StepState* shared = nullptr;
  // A collective node: its group's collective actor and its place in the group's program order.
  caf::actor collective;
  int32_t collective_index = -1;
  // Charged with the registers and every kernel call's allocations, when set (actors/node_meters.h).
  std::shared_ptr<MemoryMeter> meter;
};

struct OpActorState {
  OpActorSpec spec;
  std::vector<std::deque<DataMsg>> queues;
  std::vector<Tensor> regs;
  std::vector<int> readers;  // outstanding readers per register
  std::vector<Tensor> inputs;
  int in_flight = -1;          // register awaiting a collective's reply, -1 if none
  int64_t in_flight_start = 0; // trace start of that firing
  static inline const char* name = "sf.op";
};

caf::behavior op_actor(caf::stateful_actor<OpActorState>* self, OpActorSpec spec);

}  // namespace sf
