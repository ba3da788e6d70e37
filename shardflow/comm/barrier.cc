#include <shardflow/comm/barrier.h>

#include <shardflow/comm/detail/async.h>
#include <shardflow/comm/detail/call.h>

namespace sf::comm {

namespace {

constexpr std::string_view kOp = "Barrier";

void validate(const BarrierOptions& o) {
  detail::check_common(kOp, o.group, o.timeout);
  resolve_algorithm(Collective::kBarrier, o.algorithm, 0, o.group.size());
}

void run(const BarrierOptions& o, uint32_t seq) {
  detail::Call call(kOp, o.group, seq, o.timeout);
  const int n = call.size(), r = call.rank();
  const Tensor signal({0}, DType::kI32);  // read-only and empty: shared by every send
  uint8_t slot = 0;
  for (int dist = 1; dist < n; dist <<= 1, ++slot) {
    // Round `slot`: signal r + dist, wait for r - dist.
    call.send((r + dist) % n, signal, slot);
    call.recv((r - dist + n) % n, slot);
  }
}

}  // namespace

void barrier(const BarrierOptions& opts) {
  validate(opts);
  run(opts, opts.group.next_sequence());
}

Work barrier_async(const BarrierOptions& opts) {
  validate(opts);
  const uint32_t seq = opts.group.next_sequence();
  BarrierOptions o = opts;
  o.group = opts.group.unowned();
  return detail::submit(opts.group, [o, seq] {
    run(o, seq);
    return Tensor();
  });
}

}  // namespace sf::comm
