// Messages between a stage actor and its micro-batch actors (one process; tensors travel by
// reference and a failure as the std::exception_ptr thrown, so CAF is told not to serialise
// them: neither has a serialised form).
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <exception>
#include <vector>

#include <shardflow/core/tensor.h>
#include <shardflow/pipeline/action.h>

namespace sf::pipeline {

// Run phase `kind` (F, B or W) of the receiving micro-batch: for F, `a` holds the data
// inputs and `b` the received activations; for B, `a` holds the output gradients.
struct PhaseRequest {
  ActionKind kind;
  std::vector<Tensor> a, b;
};

// F: `a` the activations to send, `b` the loss (last stage); B: `a` the input gradients to
// send, `b` the weight gradients unless W computes them; W: `b` the weight gradients.
// `error` is set instead when the phase failed: the exception it threw, typed.
struct PhaseReply {
  std::vector<Tensor> a, b;
  size_t stashed_bytes = 0;  // what the micro-batch keeps after this phase
  std::exception_ptr error;
};

}  // namespace sf::pipeline

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sf::pipeline::PhaseRequest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sf::pipeline::PhaseReply)
