#include <shardflow/actors/collective_actor.h>

#include <exception>

#include <shardflow/actors/collective_call.h>
#include <shardflow/actors/trace.h>

namespace sf {

namespace {

// Runs every request that is next in program order.
void drain(caf::stateful_actor<CollectiveActorState>* self) {
  auto& st = self->state;
  const auto& order = st.spec.order;
  for (;;) {
    const auto& [step, index] = order[st.next];
    auto it = st.early.find({st.cycle_base + step, index});
    if (it == st.early.end()) return;
    CollectiveRequest req = std::move(it->second);
    st.early.erase(it);
    CollectiveReply reply{req.step, Tensor(), {}};
    const int64_t t0 = st.spec.on_run ? TraceRecorder::now_ns() : 0;
    try {
      reply.value = run_collective(*req.node, req.inputs, st.spec.group, st.spec.timeout);
    } catch (...) {
      reply.error = std::current_exception();  // the requester adds the node's name
    }
    if (st.spec.on_run) st.spec.on_run(*req.node, req.step, t0, TraceRecorder::now_ns());
    req.inputs.clear();  // the producers' registers are the requester's to return
    self->send(req.reply_to, std::move(reply));
    if (++st.next == order.size()) {
      st.next = 0;
      st.cycle_base += st.spec.cycle;
    }
  }
}

}  // namespace

caf::behavior collective_actor(caf::stateful_actor<CollectiveActorState>* self, CollectiveActorSpec spec) {
  self->state.spec = std::move(spec);
  auto& order = self->state.spec.order;
  if (order.empty())
    for (int32_t i = 0; i < self->state.spec.count; ++i) order.emplace_back(0, i);
  return {
      [self](CollectiveRequest& req) {
        const auto key = std::make_pair(req.step, req.index);
        self->state.early.emplace(key, std::move(req));
        drain(self);
      },
  };
}

}  // namespace sf
