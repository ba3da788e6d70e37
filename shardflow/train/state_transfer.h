/// @file
/// Sending a TrainingState from one rank to another over the world's transport: how a rank that
/// joins a running elastic job gets the agreed step's state from a member, from memory, not from
/// disk (train/elastic_train.h). The scalars and the tensors' names, dtypes and shapes travel
/// first, then the tensors in order: one of 256 KiB or more alone, as it is; smaller neighbours
/// packed into one message of up to about 1 MiB (a state has a tensor per parameter and moment,
/// and a message costs more than copying a small tensor). All under one membership tag (FIFO per
/// peer and tag, and unaffected by a Transport::interrupt).
///
/// Threading: the rank's thread, while nothing else of the rank uses the tag.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include <shardflow/comm/transport.h>
#include <shardflow/train/training_state.h>

namespace sf {

/// The membership tag every message of a transfer travels under (far above the agreement's
/// rounds, below comm::join_notice_tag).
comm::Tag training_state_tag();
/// The tag a joiner says it holds the state under (train/elastic_train.cc): rank 0 sends the
/// members theirs after that, so that their rebuild does not share the cores with its receive.
comm::Tag training_state_received_tag();

/// Sends `state`, the state of step `step`, to `peer`.
void send_training_state(comm::Transport& world, int peer, const TrainingState& state, int64_t step);

/// The bytes of each tensor message send_training_state sends for `state` (the header aside):
/// what a joiner readies its receive buffers for (comm::JoinDoor::expect).
std::vector<uint64_t> training_state_message_bytes(const TrainingState& state);

/// What recv_training_state received.
struct ReceivedState {
  TrainingState state;  ///< as the sender captured it
  int64_t step = 0;     ///< the step it is the state of
  uint64_t bytes = 0;   ///< the tensors' bytes
  /// From the header's arrival to the last tensor's: the transfer of the bytes, without the wait
  /// for the sender to start.
  std::chrono::steady_clock::duration streamed{};
};

/// Receives what send_training_state sent from `peer`; throws PeerLost when a message does not
/// come within `timeout`, Error for a malformed header.
ReceivedState recv_training_state(comm::Transport& world, int peer, std::chrono::milliseconds timeout);

}  // namespace sf
