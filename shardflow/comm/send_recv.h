/// @file
/// Send / Receive: point-to-point transfer between two ranks of a group — MindSpore's
/// ops.Send(sr_tag, dest_rank) and ops.Receive(sr_tag, src_rank, shape, dtype). A Send and the
/// Receive with the same (group, sr_tag) and matching ranks pair up; several transfers with
/// the same pair and sr_tag arrive in order. They take no group sequence number (only two
/// ranks take part), so they never disturb the group's collectives.
///
/// send() copies the tensor into a message buffer and returns without waiting for the
/// receiver: the caller may modify its tensor at once. receive() blocks until the message
/// arrives or the timeout passes (PeerLost naming the source rank), and checks that it has the
/// shape and dtype the receiver declared (ShapeError naming both).
///
/// Threading: any thread of the rank; calls for the same (peer, sr_tag) from two threads at
/// once have no defined order.
#pragma once

#include <cstdint>

#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/core/tensor.h>

namespace sf::comm {

/// The options of a Send.
struct SendOptions {
  /// The group it runs on; the calling rank's world group by default.
  Group group = default_group();
  int dest = 0;        ///< group rank
  int64_t sr_tag = 0;  ///< in [0, 2^32)
};

/// The options of a Receive: the sender, and the shape and dtype it must send.
struct ReceiveOptions {
  /// The group it runs on; the calling rank's world group by default.
  Group group = default_group();
  int src = 0;          ///< group rank
  int64_t sr_tag = 0;  ///< the sender's SendOptions::sr_tag
  Shape shape;          ///< the tensor's shape
  DType dtype = DType::kF32;  ///< the tensor's dtype
  /// How long the call may take before it fails with PeerLost (comm/options.h).
  std::chrono::milliseconds timeout = default_timeout();
};

/// Sends `input` to group rank `opts.dest` without waiting for the receiver.
void send(const Tensor& input, const SendOptions& opts);
/// The tensor the matching send() sent; ShapeError if its shape or dtype differs from the options'.
Tensor receive(const ReceiveOptions& opts);

}  // namespace sf::comm
