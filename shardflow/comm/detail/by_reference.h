// The pieces of the by-reference algorithms (Algorithm::kByReference), for transports that
// hand the receiver the sender's storage itself (inproc: all ranks share one address space).
// A rank sends its own input (and output) tensors to its peers, every rank reads — and for
// AllReduce writes — the others' tensors in place, and a closing handshake keeps each rank in
// the collective until all peers are done with its tensors. So the data is touched once, with
// no pooled copies, and the caller may still overwrite its tensors as soon as the call returns
// (comm/transport.h).
//
// If a rank fails half way, its peers still hold references to its tensors, so the storage
// stays valid; they cannot finish either (its "done" never comes) and fail with PeerLost.
//
// Threading: called by the thread running the collective's Call.
#pragma once

#include <cstdint>
#include <vector>

#include <shardflow/comm/detail/call.h>
#include <shardflow/comm/reduce_op.h>
#include <shardflow/core/tensor.h>

namespace sf::comm::detail {

// Sends `t` itself to every other member of the call's group under `slot`.
void send_to_all(Call& call, const Tensor& t, uint8_t slot);

// Receives every other member's tensor under `slot`; element r is `mine`. Throws ShapeError
// when a peer's tensor has another element count or dtype than `mine`.
std::vector<Tensor> recv_from_all(Call& call, const Tensor& mine, uint8_t slot);

// Tells `peers` that this rank is done with their tensors, then waits for the same word from
// `waits_for` (slot `slot`).
void signal_done(Call& call, const std::vector<int>& peers, uint8_t slot);
void wait_done(Call& call, const std::vector<int>& waits_for, uint8_t slot);
// Every other member of the group.
std::vector<int> others(const Call& call);

// dst[dst_off ..) = src[src_off ..), n elements, into an output of `out_bytes` in all: with
// non-temporal stores when that output is large (comm/detail/blocks.h), else memcpy. Call
// stream_fence() before signal_done() if any copy streamed.
void copy_to_output(Tensor& dst, int64_t dst_off, const Tensor& src, int64_t src_off, int64_t n, size_t out_bytes);

// dst[i] = (((src[0][i] op src[1][i]) op src[2][i]) ...) for i in [begin, end): the same order
// on every rank, so the same bits. `dst` may be one of the sources only if it is src[0].
void reduce_in_order(ReduceOp op, DType dtype, void* dst, const std::vector<const Tensor*>& src, int64_t begin,
                     int64_t end);

}  // namespace sf::comm::detail
