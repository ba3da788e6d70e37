// Messages between the actors of one process (op actors, collective actors, the driver).
// Tensors travel by reference (shared storage) and errors as std::exception_ptr (the type
// that was thrown, core/error_context.h): messages holding either cannot be serialised and
// are local-only, so CAF is told not to serialise them. The others have an inspect().
#pragma once

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/meta/type_name.hpp>
#include <cstdint>
#include <exception>
#include <vector>

#include <shardflow/core/tensor.h>
#include <shardflow/ops/graph.h>

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

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, AckMsg& x) {
  return f(caf::meta::type_name("AckMsg"), x.reg);
}

// From the op actor of a collective node to its group's collective actor: run `node` for
// `step` on these inputs, which stay in the producers' registers until the reply.
struct CollectiveRequest {
  int32_t index;  // the node's place in its group's program order
  int64_t step;
  const Node* node;
  std::vector<Tensor> inputs;
  caf::actor reply_to;
};

// The collective's result, or the exception it threw (value undefined, error set).
struct CollectiveReply {
  int64_t step;
  Tensor value;
  std::exception_ptr error;
};

// The last fetch of a step arrived (to the driver of a run_steps loop), or: start the loop.
struct StepDoneMsg {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepDoneMsg&) {
  return f(caf::meta::type_name("StepDoneMsg"));
}

}  // namespace sf

// A Tensor by reference (shared storage), a Node pointer or an exception_ptr: meaningful only
// inside this process, so no serialisation exists for them.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sf::DataMsg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sf::CollectiveRequest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sf::CollectiveReply)
