/// @file
/// NeighborExchangeV2: MindSpore's ops.NeighborExchangeV2(send_rank_ids, send_lens,
/// recv_rank_ids, recv_lens, data_format="NCHW") — the halo exchange of a 4-D NCHW tensor split
/// over a 2-D grid of ranks along H and W, so that a convolution on each tile sees the rows and
/// columns of its neighbours.
///
/// Contract (ranks are group ranks; input (N, C, H, W)):
///  * Directions are indexed [top, top_right, right, bottom_right, bottom, bottom_left, left,
///    top_left]; send_rank_ids and recv_rank_ids have one entry per direction, -1 meaning no
///    neighbour there (nothing is sent or received in that direction).
///  * send_lens and recv_lens are [top, bottom, left, right] numbers of rows/columns.
///  * To its neighbour in a direction a rank sends the slice of its input adjacent to that side:
///    top gets the first send_lens[0] rows, bottom the last send_lens[1] rows, left the first
///    send_lens[2] columns, right the last send_lens[3] columns (all W columns, resp. all H
///    rows); a corner gets the corner block, e.g. top_right the first send_lens[0] rows of the
///    last send_lens[3] columns.
///  * The output is (N, C, t + H + b, l + W + r) where t, b, l, r are recv_lens[0..3] on the
///    sides that have a neighbour (recv_rank_ids of top, bottom, left, right not -1) and 0 on
///    the others — MindSpore's shape rule, so edge tiles of a grid come out smaller. The input
///    sits in the centre, and around it the halos received from the neighbours in the same
///    layout (the top halo is t x W, the top_right corner t x r, ...). A corner has a
///    neighbour exactly when both sides next to it have one (checked, as MindSpore does).
///  * Consistency between neighbours (a rank's recv_lens[0] equals its top neighbour's
///    send_lens[1], and so on) is checked when each halo arrives: a halo of another shape is a
///    ShapeError naming the sender and both shapes.
///
/// Worked example, MindSpore's, two ranks stacked vertically, input (1, 1, 2, 2):
/// @verbatim
///   rank 0 (all ones):  send_rank_ids = recv_rank_ids = [-1, -1, -1, -1, 1, -1, -1, -1],
///                       send_lens = recv_lens = [0, 1, 0, 0]
///   rank 1 (all twos):  send_rank_ids = recv_rank_ids = [0, -1, -1, -1, -1, -1, -1, -1],
///                       send_lens = recv_lens = [1, 0, 0, 0]
///   rank 0 returns (1, 1, 3, 2) [[1, 1], [1, 1], [2, 2]]; rank 1 returns [[1, 1], [2, 2], [2, 2]].
/// @endverbatim
///
/// Checks before any message: data_format "NCHW", a 4-D input, 8 rank ids per list, each -1 or
/// a group rank other than this one, 4 lens per list, none negative, send_lens[0..1] <= H and
/// send_lens[2..3] <= W, the corner rule above. (MindSpore also refuses a rank listed in two
/// directions; that is allowed here — a periodic grid two tiles wide needs it — since
/// messages are paired by direction.)
///
/// Algorithm: the (up to) 8 halos are packed into pooled buffers and queued first (sends never
/// block), then the 8 receives are taken. A message goes under a slot naming the direction it
/// was sent in, and a rank expects its top halo under its top neighbour's "bottom" slot, so
/// the pairing holds even when one rank is the neighbour in several directions (a periodic
/// grid two tiles wide).
///
/// Threading: as AllReduce (comm/all_reduce.h); neighbor_exchange_v2_async() runs on the
/// group's worker: do not modify `input` until its Work is done.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/comm/work.h>
#include <shardflow/core/tensor.h>

namespace sf::comm {

/// The options of a NeighborExchangeV2.
struct NeighborExchangeV2Options {
  /// The group it runs on; the calling rank's world group by default.
  Group group = default_group();
  std::vector<int> send_rank_ids;    ///< 8 group ranks or -1, by direction
  std::vector<int64_t> send_lens;    ///< [top, bottom, left, right]
  std::vector<int> recv_rank_ids;    ///< 8 group ranks or -1, by direction
  std::vector<int64_t> recv_lens;    ///< [top, bottom, left, right]
  std::string data_format = "NCHW";  ///< the only layout supported, as in MindSpore
  /// How long the call may take before it fails with PeerLost (comm/options.h).
  std::chrono::milliseconds timeout = default_timeout();
};

/// The input with its neighbours' halos around it; throws InvalidArgument (bad options, before
/// any message), ShapeError (a halo of another shape) or PeerLost (a rank stalled).
Tensor neighbor_exchange_v2(const Tensor& input, const NeighborExchangeV2Options& opts);
/// As neighbor_exchange_v2(), on the group's worker; the Work's result is the output.
Work neighbor_exchange_v2_async(const Tensor& input, const NeighborExchangeV2Options& opts);

}  // namespace sf::comm
