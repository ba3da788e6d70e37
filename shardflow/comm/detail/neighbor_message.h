// Shaped messages for NeighborExchange and NeighborExchangeV2: unlike the ring and pairwise
// collectives, a neighbour exchange cannot derive what it receives from what it sends, so
// each message carries its shape and the receiver checks it against the one it declared.
//
// Ownership: shaped_message() returns a pooled buffer (one reader reference) that the caller
// hands to Call::send (comm/transport.h); recv_shaped() returns the received tensor, which
// the caller releases with BufferPool::release() once it has copied it out.
//
// Threading: called by the thread running the collective's Call.
#pragma once

#include <cstdint>
#include <string_view>

#include <shardflow/comm/detail/call.h>
#include <shardflow/core/tensor.h>

namespace sf::comm::detail {

// An empty message of `shape`; fill its elements, then send it. A zero-element shape gives a
// fresh (unpooled) tensor, so the receiver still sees the exact shape.
Tensor shaped_message(const Shape& shape, DType dtype);

// The next message from group rank `peer` of `group` (the call's) under `slot`, which must have `shape` and `dtype`:
// otherwise the message is released and ShapeError names `what` (e.g. "recv_rank_ids[1]"),
// the sender's world rank and both shapes. PeerLost as Call::recv.
Tensor recv_shaped(Call& call, const Group& group, int peer, uint8_t slot, const Shape& shape, DType dtype,
                   std::string_view what);

}  // namespace sf::comm::detail
