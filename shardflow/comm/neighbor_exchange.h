/// @file
/// NeighborExchange: MindSpore's ops.NeighborExchange(send_rank_ids, recv_rank_ids,
/// recv_shapes, send_shapes, recv_type) — a batch of point-to-point transfers that a set of
/// ranks perform together, e.g. the ring or stencil exchanges of a pipelined or spatially split
/// model. Unlike AlltoAll, each rank talks only to the peers it names.
///
/// Contract (ranks are group ranks):
///  * inputs[i] (shape send_shapes[i]) goes to send_rank_ids[i];
///  * output[j] is the tensor received from recv_rank_ids[j], of shape recv_shapes[j] and
///    dtype recv_type; the outputs are in recv_rank_ids order;
///  * several entries may name the same peer: the k-th tensor a rank sends to p pairs with the
///    k-th receive from it that p lists (FIFO, as MPI matching);
///  * either list may be empty (a rank that only sends, or only receives).
/// The program as a whole must be consistent: every send has a matching receive on its target.
///
/// Worked example, a ring of 3 ranks, each sending one f32(2,) to its right neighbour:
/// @verbatim
///   rank r: send_rank_ids = {(r+1)%3}, recv_rank_ids = {(r+2)%3},
///           send_shapes = recv_shapes = {(2,)}, inputs = {[r, r]}
///   rank 0 returns {[2, 2]}, rank 1 {[0, 0]}, rank 2 {[1, 1]}.
/// @endverbatim
///
/// Checks before any message: list lengths (send_rank_ids vs send_shapes vs inputs, and
/// recv_rank_ids vs recv_shapes), ranks inside the group and not this rank itself, input
/// shapes equal to send_shapes, recv shapes with no negative dim. At receive, a tensor whose
/// shape or dtype differs from the declared one is a ShapeError naming the sender and both.
///
/// Algorithm: every send is queued first (sends never block), then the receives are taken in
/// list order, so no pattern of neighbours can deadlock. Messages are pooled copies of the
/// inputs (comm/transport.h): the caller may overwrite its inputs as soon as the call returns.
///
/// Threading: as AllReduce (comm/all_reduce.h). The async form reads the inputs on the group's
/// worker: the caller must not write them until the handle is done.
#pragma once

#include <chrono>
#include <exception>
#include <memory>
#include <vector>

#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/comm/work.h>
#include <shardflow/core/tensor.h>

namespace sf::comm {

/// The options of a NeighborExchange.
struct NeighborExchangeOptions {
  /// The group it runs on; the calling rank's world group by default.
  Group group = default_group();
  std::vector<int> send_rank_ids;  ///< group ranks, one per input
  std::vector<int> recv_rank_ids;  ///< group ranks, one per output
  std::vector<Shape> recv_shapes;  ///< one per recv_rank_ids entry
  std::vector<Shape> send_shapes;  ///< one per send_rank_ids entry; must equal the inputs' shapes
  DType recv_type = DType::kF32;   ///< the dtype of every received tensor
  /// How long the call may take before it fails with PeerLost (comm/options.h).
  std::chrono::milliseconds timeout = default_timeout();
};

/// The handle of neighbor_exchange_async: a Work whose result is a list of tensors.
/// Threading: as Work (comm/work.h).
class NeighborExchangeWork {
 public:
  NeighborExchangeWork() = default;  ///< no operation; valid() is false
  /// The handle of `work`, which writes the received tensors into `outputs`.
  NeighborExchangeWork(Work work, std::shared_ptr<std::vector<Tensor>> outputs)
      : work_(std::move(work)), outputs_(std::move(outputs)) {}

  /// As Work::valid.
  bool valid() const { return work_.valid(); }
  /// As Work::done.
  bool done() const { return work_.done(); }
  /// As Work::wait.
  bool wait(std::chrono::milliseconds timeout) { return work_.wait(timeout); }
  /// Waits until the exchange finishes, rethrows its error or returns the received tensors.
  std::vector<Tensor> get();
  /// As Work::error.
  std::exception_ptr error() const { return work_.error(); }

 private:
  Work work_;
  std::shared_ptr<std::vector<Tensor>> outputs_;  ///< written by the worker before work_ finishes
};

/// The tensors received, in recv_rank_ids order; throws InvalidArgument (bad options, before
/// any message), ShapeError (a tensor unlike the declared one) or PeerLost (a rank stalled).
std::vector<Tensor> neighbor_exchange(const std::vector<Tensor>& inputs, const NeighborExchangeOptions& opts);
/// As neighbor_exchange(), on the group's worker.
NeighborExchangeWork neighbor_exchange_async(const std::vector<Tensor>& inputs, const NeighborExchangeOptions& opts);

}  // namespace sf::comm
