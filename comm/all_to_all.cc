#include "comm/all_to_all.h"

#include "comm/buffer_pool.h"
#include "comm/detail/async.h"
#include "comm/detail/blocks.h"
#include "comm/detail/call.h"

namespace sf::comm {

namespace {

constexpr std::string_view kOp = "AlltoAll";

struct Plan {
  Algorithm algo;
  int split_dim, concat_dim;  // normalised to [0, rank)
};

Plan validate(const Tensor& input, const AllToAllOptions& o) {
  detail::check_common(kOp, o.group, o.timeout);
  detail::check_input(kOp, input);
  const std::string g = o.group.name();
  const int rank = input.rank();
  SF_ENFORCE(rank >= 1, InvalidArgument, "{} (group '{}'): input {} is a scalar", kOp, g, input.describe());
  SF_ENFORCE(o.split_count == o.group.size(), InvalidArgument,
             "{} (group '{}'): split_count {} must equal the group size {}", kOp, g, o.split_count, o.group.size());
  for (auto [name, d] : {std::pair{"split_dim", o.split_dim}, std::pair{"concat_dim", o.concat_dim}})
    SF_ENFORCE(d >= -rank && d < rank, InvalidArgument, "{} (group '{}'): {} {} is out of range for input {}", kOp, g,
               name, d, input.describe());
  Plan p{Algorithm::kPairwise, o.split_dim < 0 ? o.split_dim + rank : o.split_dim,
         o.concat_dim < 0 ? o.concat_dim + rank : o.concat_dim};
  SF_ENFORCE(input.dim(p.split_dim) % o.split_count == 0, InvalidArgument,
             "{} (group '{}'): dim {} (split_dim) of input {} is not divisible by split_count {}", kOp, g, p.split_dim,
             input.describe(), o.split_count);
  p.algo = resolve_algorithm(Collective::kAllToAll, o.algorithm, static_cast<int64_t>(input.nbytes()), o.group.size());
  return p;
}

int64_t prod(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// Block j of the input along split_dim, packed contiguously into a pooled buffer.
Tensor pack(const Tensor& in, int sd, int n, int j) {
  const Shape& s = in.shape();
  const int64_t outer = prod(s, 0, sd), inner = prod(s, sd + 1, s.size()), mid = s[sd] / n;
  Tensor buf = BufferPool::global().acquire(in.dtype(), outer * mid * inner);
  for (int64_t o = 0; o < outer; ++o)
    detail::copy_elems(buf, o * mid * inner, in, (o * s[sd] + j * mid) * inner, mid * inner);
  return buf;
}

// Places the block from rank j (shape `blk`) at position j along concat_dim of `out`.
void unpack(Tensor& out, const Tensor& buf, const Shape& blk, int cd, int n, int j) {
  const int64_t outer = prod(blk, 0, cd), len = prod(blk, cd, blk.size());
  for (int64_t o = 0; o < outer; ++o) detail::copy_elems(out, (o * n + j) * len, buf, o * len, len);
}

Tensor run(const Tensor& input, const AllToAllOptions& o, const Plan& p, uint32_t seq) {
  detail::Call call(detail::Signature::of(kOp, input)
                        .with("split_count", o.split_count)
                        .with("split_dim", o.split_dim)
                        .with("concat_dim", o.concat_dim),
                    o.group, seq, o.timeout);
  const int n = call.size(), r = call.rank();
  Shape blk = input.shape();
  blk[p.split_dim] /= n;
  Shape shape = blk;
  shape[p.concat_dim] *= n;
  Tensor out(shape, input.dtype());
  if (out.numel() == 0) return out;
  BufferPool& pool = BufferPool::global();
  // Step 0: this rank's own block stays here.
  Tensor own = pack(input, p.split_dim, n, r);
  unpack(out, own, blk, p.concat_dim, n, r);
  pool.release(own);
  const int64_t blk_numel = sf::numel(blk);
  // Step s: send block r+s to rank r+s, receive rank r-s's block for this rank.
  for (int s = 1; s < n; ++s) {
    const int to = (r + s) % n, from = (r - s + n) % n;
    call.send(to, pack(input, p.split_dim, n, to));
    Tensor got = call.recv(from);
    SF_ENFORCE(got.numel() == blk_numel && got.dtype() == input.dtype(), ShapeError,
               "{}: received {} from rank {} where a block {} of {} was expected", call.where(), got.describe(), from,
               shape_str(blk), dtype_name(input.dtype()));
    unpack(out, got, blk, p.concat_dim, n, from);
    pool.release(got);
  }
  return out;
}

}  // namespace

Tensor all_to_all(const Tensor& input, const AllToAllOptions& opts) {
  const Plan plan = validate(input, opts);
  return run(input, opts, plan, opts.group.next_sequence());
}

Work all_to_all_async(const Tensor& input, const AllToAllOptions& opts) {
  const Plan plan = validate(input, opts);
  return detail::submit_collective(input, opts, plan, run);
}

}  // namespace sf::comm
