// The two ring passes that AllReduce, ReduceScatter and AllGather are built from, one
// segment at a time. Ranks form the ring 0 -> 1 -> ... -> n-1 -> 0 (group ranks); every rank
// sends to its right neighbour and receives from its left one, n-1 steps per pass, moving
// 1/n of the data per step: bandwidth-optimal. Segments keep each message at most
// kSegmentBytes: callers loop over segments k = 0, 1, ..., and since sends never block, a
// rank runs ahead on the next segment while its neighbour finishes the last — the pipeline.
//
// Reduction order (the same on every rank): block j is reduced along the ring starting at
// rank j+1, ((x[j+1] op x[j+2]) op ...) op x[j], and ends on rank j; the all-gather pass then
// copies those bytes to everyone, so all ranks hold bitwise-identical results.
//
// Threading: called by the thread running the collective's Call.
#pragma once

#include <vector>

#include "comm/detail/blocks.h"
#include "comm/detail/call.h"
#include "comm/reduce_op.h"

namespace sf::comm::detail {

// Ring reduce-scatter of segment k of every block of flat tensor `in` (blocks[j] is block j's
// element range). Returns a pooled buffer (one reference) holding the fully reduced segment k
// of block call.rank(). Message slot 0.
Tensor ring_reduce_scatter_segment(Call& call, ReduceOp op, const Tensor& in, const std::vector<Range>& blocks,
                                   int64_t seg, int64_t k);

// Ring all-gather of segment k: `mine` (pooled, one reference, given up) holds segment k of
// block call.rank(); writes every block's segment k into flat tensor `out`. Message slot 1.
void ring_all_gather_segment(Call& call, Tensor mine, Tensor& out, const std::vector<Range>& blocks, int64_t seg,
                             int64_t k);

}  // namespace sf::comm::detail
