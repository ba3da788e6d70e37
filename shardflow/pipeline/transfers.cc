#include <shardflow/pipeline/transfers.h>

#include <shardflow/core/error.h>

namespace sf::pipeline {

Schedule with_transfers(const Schedule& s) {
  Schedule out = s;
  const int p = s.stages;
  const int last = p * s.chunks - 1;
  for (int stage = 0; stage < p; ++stage) {
    std::vector<Action>& list = out.actions[stage];
    list.clear();
    for (const Action& a : s.actions[stage]) {
      SF_ENFORCE(is_compute(a.kind), InvalidArgument,
                 "pipeline: stage {} already has the transfer {}; lower a compute-only schedule", stage,
                 to_string(a));
      const int k = a.chunk * p + stage;  // virtual stage
      const Action recv_f{ActionKind::kRecvActivation, a.micro_batch, a.chunk};
      const Action send_f{ActionKind::kSendActivation, a.micro_batch, a.chunk};
      const Action recv_b{ActionKind::kRecvGradient, a.micro_batch, a.chunk};
      const Action send_b{ActionKind::kSendGradient, a.micro_batch, a.chunk};
      if (a.kind == ActionKind::kForward) {
        if (k > 0) list.push_back(recv_f);
        list.push_back(a);
        if (k < last) list.push_back(send_f);
      } else if (a.kind == ActionKind::kBackward) {
        if (k < last) list.push_back(recv_b);
        list.push_back(a);
        if (k > 0) list.push_back(send_b);
      } else {
        list.push_back(a);
      }
    }
  }
  return out;
}

}  // namespace sf::pipeline
