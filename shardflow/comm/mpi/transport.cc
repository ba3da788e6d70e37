#include <shardflow/comm/mpi/transport.h>

#include <climits>
#include <mutex>

#include <shardflow/comm/mpi/collectives.h>
#include <shardflow/core/error.h>

namespace sf::comm::mpi {

namespace {
// 64 KiB of f32 or i32 input: where the ring over the fabric's messages overtook Open MPI's
// non-blocking ReduceScatter (docs/benchmarks.md).
constexpr int64_t kRingReduceScatterMinElems = int64_t{16} << 10;
}  // namespace

void MpiTransport::check_peer(int peer, const char* what) const {
  SF_ENFORCE(peer >= 0 && peer < size(), InvalidArgument, "mpi {}: peer rank {} outside a world of {}", what, peer,
             size());
}

void MpiTransport::send(int peer, Tag tag, const Tensor& t) {
  check_peer(peer, "send");
  fabric_->post(peer, tag, t);
}

Tensor MpiTransport::recv(int peer, Tag tag, std::chrono::milliseconds timeout) {
  check_peer(peer, "recv");
  return fabric_->take(peer, tag, timeout);
}

bool MpiTransport::supports(Collective c, int64_t count) const {
  // MPI counts are ints; the element count of the larger buffer bounds every count passed.
  // Group communicators are created under tags kCreateTagBase.. (comm/mpi/collectives.h).
  return c != Collective::kBarrier && count <= INT_MAX && fabric_->tag_ub() > kCreateTagBase;
}

bool MpiTransport::prefers(Collective c, int64_t count) const {
  return c != Collective::kReduceScatter || count < kRingReduceScatterMinElems;
}

std::unique_ptr<NativeOperation> MpiTransport::start(uint32_t group_id, const std::vector<int>& world_ranks,
                                                     NativeRequest req) {
  auto op = std::make_shared<NativeOp>();
  op->group_id = group_id;
  op->world_ranks = world_ranks;
  op->req = std::move(req);
  fabric_->start_native(op);
  return std::make_unique<NativeWaiter>(*fabric_, std::move(op));
}

}  // namespace sf::comm::mpi

namespace sf::comm {

std::shared_ptr<Transport> make_mpi_world() {
  static std::mutex mu;
  static std::weak_ptr<mpi::MpiTransport> current;  // one endpoint per process
  std::lock_guard<std::mutex> lock(mu);
  if (auto t = current.lock()) return t;
  auto t = std::make_shared<mpi::MpiTransport>(std::make_unique<mpi::Fabric>());
  current = t;
  return t;
}

}  // namespace sf::comm
