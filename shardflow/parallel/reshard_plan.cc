#include <shardflow/parallel/reshard_plan.h>

#include <algorithm>
#include <tuple>


namespace sf {

namespace {

constexpr std::string_view kSource = "reshard source";
constexpr std::string_view kTarget = "reshard target";

// The source layout's blocks: each dim cut into `splits` blocks of `extent` elements, and the
// ranks holding each block (several along replicated axes), by the block's row-major index.
struct SourceGrid {
  std::vector<int64_t> splits;
  std::vector<int64_t> extent;
  std::vector<std::vector<int>> holders;
};

SourceGrid source_grid(const Shape& global, const TensorLayout& from) {
  SourceGrid g;
  int64_t blocks = 1;
  for (int d = 0; d < from.dims(); ++d) {
    g.splits.push_back(from.splits(d));
    g.extent.push_back(global[d] / g.splits[d]);
    blocks *= g.splits[d];
  }
  g.holders.resize(static_cast<size_t>(blocks));
  const int64_t ranks = from.mesh().device_count();
  for (int64_t r = 0; r < ranks; ++r) {
    int64_t ordinal = 0;
    for (int d = 0; d < from.dims(); ++d) ordinal = ordinal * g.splits[d] + from.block(r, d);
    g.holders[static_cast<size_t>(ordinal)].push_back(static_cast<int>(r));
  }
  return g;
}

// The runs copying box `piece` from the row-major block of box `src` to that of box `dst`.
// The run spans the innermost dims that both blocks hold whole, and the next dim's extent of
// the piece; the dims outside it are walked as an odometer.
std::vector<ByteRun> byte_runs(const ShardBox& piece, const ShardBox& src, const ShardBox& dst, int64_t elem) {
  const int r = static_cast<int>(piece.dims.size());
  if (r == 0) return {ByteRun{0, 0, elem}};
  const std::vector<int64_t> src_strides = strides_of(src.shape());
  const std::vector<int64_t> dst_strides = strides_of(dst.shape());
  int k = r - 1;
  while (k > 0 && piece.dims[k].extent == src.dims[k].extent && piece.dims[k].extent == dst.dims[k].extent) --k;
  int64_t run = elem;
  for (int d = k; d < r; ++d) run *= piece.dims[d].extent;
  int64_t count = 1;
  for (int d = 0; d < k; ++d) count *= piece.dims[d].extent;
  std::vector<ByteRun> runs;
  runs.reserve(static_cast<size_t>(count));
  std::vector<int64_t> idx(static_cast<size_t>(k), 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t s = 0;
    int64_t t = 0;
    for (int d = 0; d < r; ++d) {
      const int64_t at = piece.dims[d].offset + (d < k ? idx[d] : 0);
      s += (at - src.dims[d].offset) * src_strides[d];
      t += (at - dst.dims[d].offset) * dst_strides[d];
    }
    runs.push_back(ByteRun{s * elem, t * elem, run});
    for (int d = k - 1; d >= 0 && ++idx[d] == piece.dims[d].extent; --d) idx[d] = 0;
  }
  return runs;
}

TargetPlan plan_target(const Shape& global, DType dtype, const TensorLayout& to, const SourceGrid& grid,
                       int target_rank) {
  const auto elem = static_cast<int64_t>(dtype_size(dtype));
  TargetPlan plan;
  plan.target_rank = target_rank;
  plan.box = shard_box(to, global, target_rank, kTarget);
  plan.shard_bytes = plan.box.numel() * elem;
  if (plan.box.empty()) return plan;
  // The source blocks the target box meets: per dim, block indices lo..hi.
  const int r = static_cast<int>(global.size());
  std::vector<int64_t> lo(r);
  std::vector<int64_t> hi(r);
  for (int d = 0; d < r; ++d) {
    const DimSlice& t = plan.box.dims[d];
    lo[d] = t.offset / grid.extent[d];
    hi[d] = (t.offset + t.extent - 1) / grid.extent[d];
  }
  std::vector<int64_t> b = lo;
  while (true) {
    int64_t ordinal = 0;
    ShardBox src;
    for (int d = 0; d < r; ++d) {
      ordinal = ordinal * grid.splits[d] + b[d];
      src.dims.push_back(DimSlice{b[d] * grid.extent[d], grid.extent[d]});
    }
    const std::vector<int>& holders = grid.holders[static_cast<size_t>(ordinal)];
    ReshardPiece piece;
    piece.source_rank = holders[static_cast<size_t>((target_rank + ordinal) % static_cast<int64_t>(holders.size()))];
    piece.box = intersect(src, plan.box);
    piece.runs = byte_runs(piece.box, src, plan.box, elem);
    plan.pieces.push_back(std::move(piece));
    int d = r - 1;
    for (; d >= 0 && ++b[d] > hi[d]; --d) b[d] = lo[d];
    if (d < 0) break;
  }
  std::sort(plan.pieces.begin(), plan.pieces.end(), [](const ReshardPiece& x, const ReshardPiece& y) {
    return std::tie(x.source_rank, x.runs.front().source_offset) <
           std::tie(y.source_rank, y.runs.front().source_offset);
  });
  return plan;
}

}  // namespace

int64_t ReshardPiece::bytes() const {
  int64_t n = 0;
  for (const ByteRun& run : runs) n += run.bytes;
  return n;
}

int64_t TargetPlan::bytes_read() const {
  int64_t n = 0;
  for (const ReshardPiece& p : pieces) n += p.bytes();
  return n;
}

TargetPlan plan_reshard_target(const Shape& global, DType dtype, const TensorLayout& from, const TensorLayout& to,
                               int target_rank) {
  shard_box(from, global, 0, kSource);  // refuses a layout that cannot hold the tensor
  return plan_target(global, dtype, to, source_grid(global, from), target_rank);
}

ReshardPlan plan_reshard(const Shape& global, DType dtype, const TensorLayout& from, const TensorLayout& to) {
  ReshardPlan plan{global, dtype, from, to, {}, {}};
  const int64_t m = from.mesh().device_count();
  for (int64_t r = 0; r < m; ++r) plan.sources.push_back(shard_box(from, global, r, kSource));
  const SourceGrid grid = source_grid(global, from);
  const int64_t n = to.mesh().device_count();
  for (int64_t t = 0; t < n; ++t) plan.targets.push_back(plan_target(global, dtype, to, grid, static_cast<int>(t)));
  return plan;
}

}  // namespace sf
