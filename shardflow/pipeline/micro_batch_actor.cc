#include <shardflow/pipeline/micro_batch_actor.h>

#include <shardflow/pipeline/messages.h>

namespace sf::pipeline {

caf::behavior micro_batch_actor(caf::event_based_actor*, std::shared_ptr<MicroBatch> mb) {
  return {[mb](PhaseRequest& req) -> PhaseReply {
    PhaseReply reply;
    try {
      if (req.kind == ActionKind::kForward) {
        MicroBatch::Forward f = mb->forward(req.a, req.b);
        reply.a = std::move(f.sends);
        if (f.loss.defined()) reply.b.push_back(f.loss);
      } else if (req.kind == ActionKind::kBackward) {
        MicroBatch::Backward b = mb->backward(req.a);
        reply.a = std::move(b.input_grads);
        reply.b = std::move(b.param_grads);
      } else {
        reply.b = mb->weight();
      }
      reply.stashed_bytes = mb->stashed_bytes();
    } catch (...) {
      reply.error = std::current_exception();  // the stage adds which action it was
    }
    return reply;
  }};
}

}  // namespace sf::pipeline
