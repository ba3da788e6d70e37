#include <shardflow/actors/op_actor.h>

#include <shardflow/core/error_context.h>
#include <shardflow/ops/op_def.h>
#include <shardflow/ops/plan.h>

namespace sf {

namespace {

int free_register(const OpActorState& st) {
  for (size_t r = 0; r < st.readers.size(); ++r)
    if (st.readers[r] == 0) return static_cast<int>(r);
  return -1;
}

bool inputs_ready(const OpActorState& st) {
  for (const auto& q : st.queues)
    if (q.empty()) return false;
  return true;
}

// Hands register r, just written for `step`, to the consumers and fetches, and returns the
// inputs to their producers.
void finish_firing(caf::stateful_actor<OpActorState>* self, int r, int64_t step, int64_t t0) {
  auto& st = self->state;
  const OpActorSpec& spec = st.spec;
  const Node& n = *spec.node;
  StepState& shared = *spec.shared;
  if (shared.trace.enabled())
    shared.trace.lane(n.id).push_back({t0, TraceRecorder::now_ns(), TraceRecorder::this_thread(), step});
  if (shared.stream) {  // fetches are handed over during the call, the register stays the actor's
    st.readers[r] = static_cast<int>(spec.consumers.size());
    for (const auto& c : spec.consumers) self->send(c.actor, DataMsg{c.slot, n.id, r, step, st.regs[r]});
    for (int f : spec.fetch_indices) {
      try {
        shared.stream->on_fetch(f, step, st.regs[r]);
      } catch (...) {
        shared.fail(std::current_exception());
      }
    }
  } else {
    st.readers[r] = static_cast<int>(spec.consumers.size() + spec.fetch_indices.size());
    for (const auto& c : spec.consumers) self->send(c.actor, DataMsg{c.slot, n.id, r, step, st.regs[r]});
    for (int f : spec.fetch_indices) shared.deliver(f, st.regs[r], r);
  }
  for (auto& q : st.queues) {
    const DataMsg& m = q.front();
    if (m.producer >= 0) self->send((*spec.actors)[m.producer], AckMsg{m.reg});
    q.pop_front();
  }
  for (auto& t : st.inputs) t = Tensor();  // drop references to the producers' registers
  if (spec.phase >= 0) shared.phase_fired(spec.phase, step, t0);
}

// Fires as long as inputs and a register are available (OneFlow's "act until fail").
void act(caf::stateful_actor<OpActorState>* self) {
  auto& st = self->state;
  const OpActorSpec& spec = st.spec;
  const Node& n = *spec.node;
  StepState& shared = *spec.shared;
  int r;
  while (st.in_flight < 0 && inputs_ready(st) && (r = free_register(st)) >= 0) {
    const int64_t step = st.queues.empty() ? 0 : st.queues[0].front().step;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      int q = spec.queue_of_slot[k];
      st.inputs[k] = q < 0 ? shared.bound[n.inputs[k]] : st.queues[q].front().value;
    }
    const int64_t t0 = shared.trace.enabled() || shared.stream ? TraceRecorder::now_ns() : 0;
    if (spec.collective) {
      st.in_flight = r;
      st.in_flight_start = t0;
      self->send(spec.collective,
                 CollectiveRequest{spec.collective_index, step, &n, st.inputs, caf::actor_cast<caf::actor>(self)});
      return;
    }
    try {
      if (n.def->inplace_input >= 0) st.regs[r] = st.inputs[n.def->inplace_input];
      const MemoryMeterScope metered(spec.meter);
      n.def->forward(n, st.inputs, st.regs[r]);
    } catch (...) {
      shared.fail(current_error_with_context(node_label(n)));
      return;
    }
    finish_firing(self, r, step, t0);
  }
}

}  // namespace

caf::behavior op_actor(caf::stateful_actor<OpActorState>* self, OpActorSpec spec) {
  auto& st = self->state;
  st.spec = std::move(spec);
  st.queues.resize(st.spec.queues);
  st.inputs.resize(st.spec.node->inputs.size());
  // An in-place op's output is its input tensor: its registers only count readers.
  // A collective's result is a fresh tensor from comm: its registers only count readers too.
  const bool no_buffer = st.spec.node->def->inplace_input >= 0 || st.spec.collective;
  const MemoryMeterScope metered(st.spec.meter);
  for (int r = 0; r < st.spec.registers; ++r) st.regs.push_back(no_buffer ? Tensor() : allocate_output(*st.spec.node));
  st.readers.assign(st.spec.registers, 0);
  return {
      [self](DataMsg& m) {
        auto& st = self->state;
        int q = m.slot < static_cast<int>(st.spec.queue_of_slot.size()) ? st.spec.queue_of_slot[m.slot]
                                                                          : st.spec.queues - 1;  // tick
        st.queues[q].push_back(std::move(m));
        act(self);
      },
      [self](AckMsg& m) {
        --self->state.readers[m.reg];
        act(self);
      },
      [self](CollectiveReply& m) {
        auto& st = self->state;
        const int r = st.in_flight;
        st.in_flight = -1;
        if (m.error) {
          st.spec.shared->fail(with_context(std::move(m.error), node_label(*st.spec.node)));
          return;
        }
        st.regs[r] = std::move(m.value);
        finish_firing(self, r, m.step, st.in_flight_start);
        act(self);
      },
  };
}

}  // namespace sf
