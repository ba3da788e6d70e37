#include "comm/detail/ring.h"

#include "comm/buffer_pool.h"

namespace sf::comm::detail {

namespace {
int mod(int a, int n) { return ((a % n) + n) % n; }
}  // namespace

Tensor ring_reduce_scatter_segment(Call& call, ReduceOp op, const Tensor& in, const std::vector<Range>& blocks,
                                   int64_t seg, int64_t k) {
  const int n = call.size(), r = call.rank();
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  const DType dt = in.dtype();
  // The first partial this rank sends is its own input of block r-1 (its chain starts here).
  Range first = segment_of(blocks[mod(r - 1, n)], seg, k);
  Tensor cur = pooled_copy(in, first.begin, first.size());
  // Step s = 0 .. n-2: pass the partial of block r-s-1 right; receive the partial of block
  // r-s-2 from the left and add this rank's input to it, in place (the buffer is ours now).
  for (int s = 0; s + 1 < n; ++s) {
    call.send(right, cur, 0);
    cur = call.recv(left, 0);
    Range part = segment_of(blocks[mod(r - s - 2, n)], seg, k);
    SF_ENFORCE(cur.numel() == part.size() && cur.dtype() == dt, ShapeError,
               "{}: ring step {} received {} where {} elements of {} were expected", call.where(), s, cur.describe(),
               part.size(), dtype_name(dt));
    const std::byte* x = static_cast<const std::byte*>(in.raw()) + part.begin * dtype_size(dt);
    reduce(op, dt, cur.raw(), cur.raw(), x, part.size());
  }
  // After step n-2 the partial is block r - n = r, reduced over all n ranks.
  return cur;
}

void ring_all_gather_segment(Call& call, Tensor mine, Tensor& out, const std::vector<Range>& blocks, int64_t seg,
                             int64_t k) {
  const int n = call.size(), r = call.rank();
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  Range own = segment_of(blocks[r], seg, k);
  copy_elems(out, own.begin, mine, 0, own.size());
  Tensor cur = std::move(mine);
  // Step s = 0 .. n-2: pass block r-s right (copied into out before it leaves); receive block
  // r-s-1 from the left and copy it into place; it is the one passed on at step s+1.
  for (int s = 0; s + 1 < n; ++s) {
    call.send(right, cur, 1);
    cur = call.recv(left, 1);
    Range part = segment_of(blocks[mod(r - s - 1, n)], seg, k);
    SF_ENFORCE(cur.numel() == part.size() && cur.dtype() == out.dtype(), ShapeError,
               "{}: all-gather step {} received {} where {} elements were expected", call.where(), s, cur.describe(),
               part.size());
    copy_elems(out, part.begin, cur, 0, part.size());
  }
  BufferPool::global().release(cur);
}

}  // namespace sf::comm::detail
