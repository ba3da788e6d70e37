#include <shardflow/comm/detail/native.h>

#include <shardflow/core/error.h>

namespace sf::comm::detail {

namespace {
// A slot no message ever uses: receiving on it only lets Call report a failure its own way.
constexpr uint8_t kNativeFailureSlot = 253;
}  // namespace

std::unique_ptr<NativeOperation> start_native(const Group& group, NativeRequest req) {
  NativeCollectives* native = group.transport().native_collectives();
  SF_ENFORCE(native != nullptr, InvalidArgument, "group '{}': transport '{}' has no native collectives", group.name(),
             group.transport().name());
  return native->start(group.id(), group.world_ranks(), std::move(req));
}

void wait_native(Call& call, const Group& group, NativeOperation& op, std::chrono::steady_clock::time_point deadline) {
  const NativeWait w = op.wait_until(deadline);
  if (w.kind == NativeWait::kDone) return;
  // A receive that cannot succeed makes Call do what it does for a lost peer: for a closed
  // one, name it at once (the transport reports the closure); past the deadline, run the
  // notice protocol starting from the right-hand neighbour.
  int peer = (call.rank() + 1) % call.size();
  if (w.kind == NativeWait::kPeerClosed && w.peer != group.transport().rank() && group.group_rank_of(w.peer) >= 0)
    peer = group.group_rank_of(w.peer);
  call.recv(peer, kNativeFailureSlot);
  SF_THROW(Error, "{}: native collective failed, but rank {} answered on the failure slot", call.where(), peer);
}

}  // namespace sf::comm::detail
