#include <shardflow/comm/detail/ring.h>

#include <shardflow/comm/buffer_pool.h>

namespace sf::comm::detail {

namespace {
int mod(int a, int n) { return ((a % n) + n) % n; }
}  // namespace

void ring_reduce_scatter(Call& call, ReduceOp op, const Tensor& in, const std::vector<Range>& blocks, int64_t seg,
                         const std::function<void(int64_t k, Tensor t)>& reduced) {
  const int n = call.size(), r = call.rank();
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  const DType dt = in.dtype();
  const int64_t segments = segment_count(blocks, seg);
  // Step 0's partials are this rank's own input of block r-1 (its chains start here).
  for (int64_t k = 0; k < segments; ++k) {
    const Range first = segment_of(blocks[mod(r - 1, n)], seg, k);
    call.send(right, pooled_copy(in, first.begin, first.size()), kReduceScatterSlot);
  }
  // Step s: receive the partial of block r-s-2 from the left and add this rank's input to it,
  // in place (the buffer is ours now); pass it right, or after step n-2, where the block is
  // r - n = r and reduced over all n ranks, hand it to the caller.
  for (int s = 0; s + 1 < n; ++s) {
    const Range block = blocks[mod(r - s - 2, n)];
    for (int64_t k = 0; k < segments; ++k) {
      Tensor cur = call.recv(left, kReduceScatterSlot);
      const Range part = segment_of(block, seg, k);
      SF_ENFORCE(cur.numel() == part.size() && cur.dtype() == dt, ShapeError,
                 "{}: ring step {} received {} where {} elements of {} were expected", call.where(), s,
                 cur.describe(), part.size(), dtype_name(dt));
      const std::byte* x = static_cast<const std::byte*>(in.raw()) + part.begin * dtype_size(dt);
      reduce(op, dt, cur.raw(), cur.raw(), x, part.size());
      if (s + 2 < n)
        call.send(right, cur, kReduceScatterSlot);
      else
        reduced(k, std::move(cur));
    }
  }
}

void ring_all_gather(Call& call, Tensor& out, const std::vector<Range>& blocks, int64_t seg) {
  const int n = call.size(), r = call.rank();
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  const int64_t segments = segment_count(blocks, seg);
  // Step s: receive block r-s-1 from the left, copy it into place, and pass it on unless the
  // right neighbour is its owner.
  for (int s = 0; s + 1 < n; ++s) {
    const Range block = blocks[mod(r - s - 1, n)];
    for (int64_t k = 0; k < segments; ++k) {
      Tensor cur = call.recv(left, kAllGatherSlot);
      const Range part = segment_of(block, seg, k);
      SF_ENFORCE(cur.numel() == part.size() && cur.dtype() == out.dtype(), ShapeError,
                 "{}: all-gather step {} received {} where {} elements were expected", call.where(), s,
                 cur.describe(), part.size());
      copy_elems(out, part.begin, cur, 0, part.size());
      if (s + 2 < n)
        call.send(right, cur, kAllGatherSlot);
      else
        BufferPool::global().release(cur);
    }
  }
}

}  // namespace sf::comm::detail
