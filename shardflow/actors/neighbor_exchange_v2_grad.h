// NeighborExchangeV2Grad: the backward of the halo exchange (comm/neighbor_exchange_v2.h),
// the kernel of the graph op of that name (ops/kernels/neighbor_exchange_ops.cc). MindSpore
// has it as a primitive of its own; here it is built on comm::neighbor_exchange.
//
// The options are the forward's with sends and receives swapped, as MindSpore's bprop makes
// them: send_rank_ids/send_lens are the forward's recv_rank_ids/recv_lens, and so on. Each
// halo region of dout (direction d, sized by send_lens) goes back to send_rank_ids[d]; the
// gradients of the slices this rank sent forward (direction e, sized by recv_lens) come back
// from recv_rank_ids[e] and are added onto the centre of dout, which is the input's own
// gradient. Messages between a pair of ranks pair up in the order of the receiver's halo
// direction on both sides (the sender walks its halos d = 0..7, the receiver its slices in the
// order of opposite(e) = 0..7), so a rank that is the neighbour in several directions still
// gets each gradient in the right place.
//
// Threading: as comm::neighbor_exchange (blocks, bounded by the timeout). dout is only read.
#pragma once

#include <chrono>
#include <vector>

#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/core/tensor.h>

namespace sf {

struct NeighborExchangeV2GradOptions {
  comm::Group group;
  std::vector<int> send_rank_ids;  // 8 by direction, -1 = none: the forward's recv_rank_ids
  std::vector<int64_t> send_lens;  // [top, bottom, left, right]: the forward's recv_lens
  std::vector<int> recv_rank_ids;  // the forward's send_rank_ids
  std::vector<int64_t> recv_lens;  // the forward's send_lens
  std::chrono::milliseconds timeout = comm::kDefaultTimeout;
};

// dout (N, C, t + H + b, l + W + r), f32 -> (N, C, H, W), where t, b, l, r are send_lens on
// the sides with a neighbour in send_rank_ids and 0 elsewhere (the forward's shape rule,
// MindSpore's). Shapes were checked when the graph node was built.
Tensor neighbor_exchange_v2_grad(const Tensor& dout, const NeighborExchangeV2GradOptions& opts);

}  // namespace sf
