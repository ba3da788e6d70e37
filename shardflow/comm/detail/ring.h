// The two ring passes that AllReduce, ReduceScatter and AllGather are built from. Ranks form
// the ring 0 -> 1 -> ... -> n-1 -> 0 (group ranks); every rank sends to its right neighbour and
// receives from its left one, n-1 steps per pass, moving 1/n of the data per step:
// bandwidth-optimal.
//
// Pipelining: each block is cut into segments (Call::segment_elems), and a pass handles them
// in (step, segment) order without ever waiting on its own sends (sends never block,
// comm/transport.h). A rank posts every segment of its first step at once, then reduces
// segment k of step s while segment k+1 is still on the wire, and forwards each reduced
// segment as soon as it is ready; AllReduce starts the all-gather of segment k as soon as its
// reduce-scatter ends, so both passes overlap too. Messages of one pass share one slot, and
// FIFO delivery per (peer, tag) matches them up: the left neighbour sends in the same
// (step, segment) order this rank receives in. Every (s, k) waits only for the left
// neighbour's (s-1, k), so the pipeline cannot deadlock.
//
// Reduction order (the same on every rank, whatever the segment size): block j is reduced
// along the ring starting at rank j+1, ((x[j+1] op x[j+2]) op ...) op x[j], and ends on rank j;
// the all-gather pass then copies those bytes to everyone, so all ranks hold bitwise-identical
// results.
//
// Threading: called by the thread running the collective's Call.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <shardflow/comm/detail/blocks.h>
#include <shardflow/comm/detail/call.h>
#include <shardflow/comm/reduce_op.h>

namespace sf::comm::detail {

// Message slots of the two passes.
inline constexpr uint8_t kReduceScatterSlot = 0;
inline constexpr uint8_t kAllGatherSlot = 1;

// Ring reduce-scatter of every block of flat tensor `in` (blocks[j] is block j's element
// range), `seg` elements per segment. For each segment k of block call.rank(), in order,
// calls reduced(k, t) with a pooled buffer (one reference, given to the callback) holding it
// fully reduced.
void ring_reduce_scatter(Call& call, ReduceOp op, const Tensor& in, const std::vector<Range>& blocks, int64_t seg,
                         const std::function<void(int64_t k, Tensor t)>& reduced);

// The receiving side of a ring all-gather: the caller has written block call.rank() into
// flat tensor `out` and sent each of its segments right under kAllGatherSlot, in order (a
// pooled buffer each). Receives every other block's segments, writes them into `out` and
// passes them on.
void ring_all_gather(Call& call, Tensor& out, const std::vector<Range>& blocks, int64_t seg);

}  // namespace sf::comm::detail
