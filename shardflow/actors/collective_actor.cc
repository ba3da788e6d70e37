#include <shardflow/actors/collective_actor.h>

#include <exception>

#include <shardflow/actors/collective_call.h>

namespace sf {

namespace {

// Runs every request that is next in program order.
void drain(caf::stateful_actor<CollectiveActorState>* self) {
  auto& st = self->state;
  for (auto it = st.early.begin(); it != st.early.end() && it->first == std::make_pair(st.next_step, st.next_index);
       it = st.early.begin()) {
    CollectiveRequest req = std::move(it->second);
    st.early.erase(it);
    CollectiveReply reply{req.step, Tensor(), {}};
    try {
      reply.value = run_collective(*req.node, req.inputs, st.spec.group, st.spec.timeout);
    } catch (...) {
      reply.error = std::current_exception();  // the requester adds the node's name
    }
    req.inputs.clear();  // the producers' registers are the requester's to return
    self->send(req.reply_to, std::move(reply));
    if (++st.next_index == st.spec.count) {
      st.next_index = 0;
      ++st.next_step;
    }
  }
}

}  // namespace

caf::behavior collective_actor(caf::stateful_actor<CollectiveActorState>* self, CollectiveActorSpec spec) {
  self->state.spec = std::move(spec);
  return {
      [self](CollectiveRequest& req) {
        const auto key = std::make_pair(req.step, req.index);
        self->state.early.emplace(key, std::move(req));
        drain(self);
      },
  };
}

}  // namespace sf
