/// @file
/// One step of a pipeline schedule on one stage (rank): a forward, a backward, zero-bubble's
/// split weight-gradient pass, or a send/receive of activations or gradients, for one
/// micro-batch on one model chunk. Schedules are lists of these (pipeline/schedule.h).
///
/// Text form (docs/pipeline.md): KIND MICRO_BATCH [. CHUNK]
/// @verbatim
///   F3       forward of micro-batch 3 (on model chunk 0)
///   B3       backward of micro-batch 3; in a zero-bubble schedule the input-gradient half only
///   W3       weight gradient of micro-batch 3 (zero-bubble schedules only)
///   F3.1     forward of micro-batch 3 on model chunk 1 (interleaved schedules, v >= 2)
///   SEND_F3  send micro-batch 3's activation to the next stage; RECV_F3 receives it there
///   SEND_B3  send micro-batch 3's input gradient to the previous stage; RECV_B3 receives it
/// @endverbatim
/// The stage is not written: it is the line (list) the action sits in. The chunk is written
/// only when it is not 0, so every action has exactly one spelling and text round-trips.
/// Chunk c of stage s is virtual stage c·p + s; a send names the sender's chunk and a receive
/// the receiver's, so SEND_F3 on the last stage's chunk 0 pairs with RECV_F3.1 on stage 0.
///
/// Threading: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>

namespace sf::pipeline {

/// What an action does; the comments give each kind's text form.
enum class ActionKind {
  kForward,         ///< F
  kBackward,        ///< B
  kWeight,          ///< W
  kSendActivation,  ///< SEND_F
  kRecvActivation,  ///< RECV_F
  kSendGradient,    ///< SEND_B
  kRecvGradient,    ///< RECV_B
};
/// The number of ActionKind values.
inline constexpr int kActionKinds = 7;

/// One step of a schedule on one stage: a kind, a micro-batch and a model chunk.
struct Action {
  ActionKind kind = ActionKind::kForward;  ///< what the action does
  int micro_batch = 0;                     ///< the micro-batch it works on
  int chunk = 0;  ///< model chunk (virtual stage on this rank); 0 unless interleaved

  /// Equal kind, micro-batch and chunk.
  bool operator==(const Action&) const = default;
};

/// F, B or W: work that takes compute time (as opposed to a send or receive).
bool is_compute(ActionKind kind);

/// "F", "B", "W", "SEND_F", "RECV_F", "SEND_B", "RECV_B".
std::string_view kind_name(ActionKind kind);

/// The action's text form, e.g.\ "F3", "B0.1", "SEND_F2".
std::string to_string(const Action& action);

/// Parses the text form. Throws InvalidArgument naming the text and what is wrong in it.
Action parse_action(std::string_view text);

}  // namespace sf::pipeline
