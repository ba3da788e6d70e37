#include <shardflow/comm/neighbor_exchange_v2.h>

#include <array>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/detail/async.h>
#include <shardflow/comm/detail/blocks.h>
#include <shardflow/comm/detail/call.h>
#include <shardflow/comm/detail/neighbor_message.h>

namespace sf::comm {

namespace {

constexpr std::string_view kOp = "NeighborExchangeV2";
constexpr int kDirs = 8;
constexpr std::array<const char*, kDirs> kDirNames = {"top",    "top_right",   "right", "bottom_right",
                                                      "bottom", "bottom_left", "left",  "top_left"};
constexpr std::array<const char*, 4> kLenNames = {"top", "bottom", "left", "right"};
enum Len { kTop = 0, kBottom = 1, kLeft = 2, kRight = 3 };

// Vertical and horizontal side of direction d: -1 top/left, +1 bottom/right, 0 neither.
int vertical(int d) { return d == 7 || d == 0 || d == 1 ? -1 : (d >= 3 && d <= 5 ? 1 : 0); }
int horizontal(int d) { return d >= 1 && d <= 3 ? 1 : (d >= 5 && d <= 7 ? -1 : 0); }
// The direction a neighbour in direction d sent our halo in (our top is its bottom).
int opposite(int d) { return (d + kDirs / 2) % kDirs; }

// A block of rows and columns of an NCHW tensor, the same for every (n, c).
struct Rect {
  int64_t row0, rows, col0, cols;
};

// The slice of the (H, W) input sent in direction d.
Rect send_rect(int d, int64_t h, int64_t w, const std::vector<int64_t>& s) {
  const int v = vertical(d), hz = horizontal(d);
  Rect r{0, h, 0, w};
  if (v < 0) r.rows = s[kTop];
  if (v > 0) r = {h - s[kBottom], s[kBottom], r.col0, r.cols};
  if (hz < 0) r.cols = s[kLeft];
  if (hz > 0) r = {r.row0, r.rows, w - s[kRight], s[kRight]};
  return r;
}

// Where the halo from direction d lands in the output (the centre starts at (l[top], l[left])).
Rect recv_rect(int d, int64_t h, int64_t w, const std::vector<int64_t>& l) {
  const int v = vertical(d), hz = horizontal(d);
  Rect r{l[kTop], h, l[kLeft], w};
  if (v < 0) r = {0, l[kTop], r.col0, r.cols};
  if (v > 0) r = {l[kTop] + h, l[kBottom], r.col0, r.cols};
  if (hz < 0) r = {r.row0, r.rows, 0, l[kLeft]};
  if (hz > 0) r = {r.row0, r.rows, l[kLeft] + w, l[kRight]};
  return r;
}

// Copies rectangle `from` of src (N, C, *, src_w) into rectangle `to` of dst (N, C, *, dst_w);
// both rectangles have the same size.
void copy_rect(Tensor& dst, int64_t dst_h, int64_t dst_w, Rect to, const Tensor& src, int64_t src_h, int64_t src_w,
               Rect from, int64_t planes) {
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < from.rows; ++i)
      detail::copy_elems(dst, (p * dst_h + to.row0 + i) * dst_w + to.col0, src,
                         (p * src_h + from.row0 + i) * src_w + from.col0, from.cols);
}

void check_ids(const NeighborExchangeV2Options& o, const char* list, const std::vector<int>& ids) {
  const Group& g = o.group;
  SF_ENFORCE(ids.size() == kDirs, InvalidArgument,
             "{} (group '{}'): {} has {} entries; it needs 8, one per direction [top, top_right, right, "
             "bottom_right, bottom, bottom_left, left, top_left]",
             kOp, g.name(), list, ids.size());
  for (int d = 0; d < kDirs; ++d) {
    SF_ENFORCE(ids[d] >= -1 && ids[d] < g.size(), InvalidArgument,
               "{} (group '{}'): {}[{}] ({}) = {} is neither -1 nor a group rank in [0, {})", kOp, g.name(), list, d,
               kDirNames[d], ids[d], g.size());
    SF_ENFORCE(ids[d] != g.rank(), InvalidArgument, "{} (group '{}'): {}[{}] ({}) = {} is this rank itself", kOp,
               g.name(), list, d, kDirNames[d], ids[d]);
  }
}

void check_lens(const NeighborExchangeV2Options& o, const char* list, const std::vector<int64_t>& lens) {
  SF_ENFORCE(lens.size() == 4, InvalidArgument,
             "{} (group '{}'): {} has {} entries; it needs 4, [top, bottom, left, right]", kOp, o.group.name(), list,
             lens.size());
  for (int i = 0; i < 4; ++i)
    SF_ENFORCE(lens[i] >= 0, InvalidArgument, "{} (group '{}'): {}[{}] ({}) = {} is negative", kOp, o.group.name(),
               list, i, kLenNames[i], lens[i]);
}

struct Plan {
  Shape out_shape;
  // recv_lens where the side has a neighbour, 0 where it has none (MindSpore grows the output
  // only on sides with a neighbour).
  std::vector<int64_t> lens;
};

// The recv_rank_ids entry of the neighbour on side `len` (top, bottom, left, right).
constexpr std::array<int, 4> kSideDir = {0, 4, 6, 2};

// A corner halo exists exactly when both sides next to it do (MindSpore's rule): the corner
// data is what the diagonal neighbour sends, and it lands between the two side halos.
void check_corner(const NeighborExchangeV2Options& o, int side1, int corner, int side2) {
  const auto& r = o.recv_rank_ids;
  const bool sides = r[side1] >= 0 && r[side2] >= 0;
  SF_ENFORCE(sides == (r[corner] >= 0), InvalidArgument,
             "{} (group '{}'): recv_rank_ids[{}] ({}) = {} but recv_rank_ids[{}] ({}) = {} and recv_rank_ids[{}] ({}) = "
             "{}; a corner has a neighbour exactly when both sides next to it have one",
             kOp, o.group.name(), corner, kDirNames[corner], r[corner], side1, kDirNames[side1], r[side1], side2,
             kDirNames[side2], r[side2]);
}

Plan validate(const Tensor& input, const NeighborExchangeV2Options& o) {
  detail::check_common(kOp, o.group, o.timeout);
  detail::check_input(kOp, input);
  const std::string& g = o.group.name();
  SF_ENFORCE(o.data_format == "NCHW", InvalidArgument, "{} (group '{}'): data_format '{}' is not supported; use 'NCHW'",
             kOp, g, o.data_format);
  SF_ENFORCE(input.rank() == 4, ShapeError, "{} (group '{}'): input {} is not 4-D (N, C, H, W)", kOp, g,
             input.describe());
  check_ids(o, "send_rank_ids", o.send_rank_ids);
  check_ids(o, "recv_rank_ids", o.recv_rank_ids);
  check_lens(o, "send_lens", o.send_lens);
  check_lens(o, "recv_lens", o.recv_lens);
  for (int i = 0; i < 4; ++i) {
    const int dim = i < 2 ? 2 : 3;
    SF_ENFORCE(o.send_lens[i] <= input.dim(dim), ShapeError,
               "{} (group '{}'): send_lens[{}] ({}) = {} is larger than {} {} of input {}; lengths inconsistent with "
               "the shape",
               kOp, g, i, kLenNames[i], o.send_lens[i], dim == 2 ? "H" : "W", input.dim(dim), input.describe());
  }
  check_corner(o, 0, 1, 2);
  check_corner(o, 2, 3, 4);
  check_corner(o, 4, 5, 6);
  check_corner(o, 6, 7, 0);
  const Shape& s = input.shape();
  std::vector<int64_t> l(4);
  for (int i = 0; i < 4; ++i) l[i] = o.recv_rank_ids[kSideDir[i]] >= 0 ? o.recv_lens[i] : 0;
  return Plan{{s[0], s[1], l[kTop] + s[2] + l[kBottom], l[kLeft] + s[3] + l[kRight]}, l};
}

Tensor run(const Tensor& input, const NeighborExchangeV2Options& o, const Plan& p, uint32_t seq) {
  detail::Call call(detail::Signature::of(kOp, input, /*shape_must_match=*/false), o.group, seq, o.timeout);
  const Shape& s = input.shape();
  const int64_t planes = s[0] * s[1], h = s[2], w = s[3];
  const int64_t out_h = p.out_shape[2], out_w = p.out_shape[3];
  Tensor out(p.out_shape, input.dtype());
  // Round 1: pack the slice for each direction that has a neighbour and queue it under the
  // direction's slot. Sends never block, so round 2 cannot wait on this rank's own sends.
  for (int d = 0; d < kDirs; ++d) {
    if (o.send_rank_ids[d] < 0) continue;
    const Rect from = send_rect(d, h, w, o.send_lens);
    Tensor msg = detail::shaped_message({s[0], s[1], from.rows, from.cols}, input.dtype());
    copy_rect(msg, from.rows, from.cols, {0, from.rows, 0, from.cols}, input, h, w, from, planes);
    call.send(o.send_rank_ids[d], msg, static_cast<uint8_t>(d));
  }
  // Round 2: the centre is the input itself.
  copy_rect(out, out_h, out_w, {p.lens[kTop], h, p.lens[kLeft], w}, input, h, w, {0, h, 0, w}, planes);
  // Round 3: each halo arrives under the opposite direction's slot (our top neighbour sent it
  // as its bottom); check its shape against our recv_lens and place it.
  for (int d = 0; d < kDirs; ++d) {
    if (o.recv_rank_ids[d] < 0) continue;
    const Rect to = recv_rect(d, h, w, p.lens);
    const std::string what = fmt::format("recv_rank_ids[{}] ({})", d, kDirNames[d]);
    Tensor got = detail::recv_shaped(call, o.group, o.recv_rank_ids[d], static_cast<uint8_t>(opposite(d)),
                                     {s[0], s[1], to.rows, to.cols}, input.dtype(), what);
    copy_rect(out, out_h, out_w, to, got, to.rows, to.cols, {0, to.rows, 0, to.cols}, planes);
    BufferPool::global().release(got);
  }
  return out;
}

}  // namespace

Tensor neighbor_exchange_v2(const Tensor& input, const NeighborExchangeV2Options& opts) {
  const Plan plan = validate(input, opts);
  return run(input, opts, plan, opts.group.next_sequence());
}

Work neighbor_exchange_v2_async(const Tensor& input, const NeighborExchangeV2Options& opts) {
  const Plan plan = validate(input, opts);
  return detail::submit_collective(input, opts, plan, run);
}

}  // namespace sf::comm
