// Messages between the actors of one process (op actors, collective actors, the driver).
// Tensors travel by reference (shared storage), so these types are local-only: CAF is told
// not to serialise them.
#pragma once

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ops/graph.h"

namespace sf {

// A producer's output for one step, sitting in the producer's register `reg` until acked.
// producer < 0: fed by the caller (an Input value or a step tick), nothing to acknowledge.
struct DataMsg {
  int32_t slot;
  int32_t producer;
  int32_t reg;
  int64_t step;
  Tensor value;
};

// A reader is done with register `reg` of the receiving actor.
struct AckMsg {
  int32_t reg;
};

// From the op actor of a collective node to its group's collective actor: run `node` for
// `step` on these inputs, which stay in the producers' registers until the reply.
struct CollectiveRequest {
  int32_t index;  // the node's place in its group's program order
  int64_t step;
  const Node* node;
  std::vector<Tensor> inputs;
  caf::actor reply_to;
};

// The collective's result, or its error (value undefined, error non-empty).
struct CollectiveReply {
  int64_t step;
  Tensor value;
  std::string error;
};

// The last fetch of a step arrived (to the driver of a run_steps loop), or: start the loop.
struct StepDoneMsg {};

}  // namespace sf

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sf::StepDoneMsg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sf::DataMsg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sf::AckMsg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sf::CollectiveRequest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sf::CollectiveReply)
