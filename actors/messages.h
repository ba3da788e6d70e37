// Messages between op actors of one process. Tensors travel by reference (shared storage),
// so these types are local-only: CAF is told not to serialise them.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <cstdint>

#include "core/tensor.h"

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

// The last fetch of a step arrived (to the driver of a run_steps loop), or: start the loop.
struct StepDoneMsg {};

}  // namespace sf

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sf::StepDoneMsg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sf::DataMsg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sf::AckMsg)
