#include <shardflow/actors/neighbor_exchange_v2_grad.h>

#include <shardflow/comm/neighbor_exchange.h>
#include <shardflow/core/error.h>

namespace sf {

namespace {

constexpr int kDirs = 8;
enum Len { kTop = 0, kBottom = 1, kLeft = 2, kRight = 3 };

// Directions [top, top_right, right, bottom_right, bottom, bottom_left, left, top_left]:
// vertical/horizontal side, -1 top/left, +1 bottom/right, 0 neither.
int vertical(int d) { return d == 7 || d == 0 || d == 1 ? -1 : (d >= 3 && d <= 5 ? 1 : 0); }
int horizontal(int d) { return d >= 1 && d <= 3 ? 1 : (d >= 5 && d <= 7 ? -1 : 0); }
int opposite(int d) { return (d + kDirs / 2) % kDirs; }

struct Rect {
  int64_t row0, rows, col0, cols;
};

// The slice of the (h, w) input sent forward in direction d (lens = the forward's send_lens).
Rect slice_rect(int d, int64_t h, int64_t w, const std::vector<int64_t>& lens) {
  Rect r{0, h, 0, w};
  if (vertical(d) < 0) r.rows = lens[kTop];
  if (vertical(d) > 0) r.row0 = h - lens[kBottom], r.rows = lens[kBottom];
  if (horizontal(d) < 0) r.cols = lens[kLeft];
  if (horizontal(d) > 0) r.col0 = w - lens[kRight], r.cols = lens[kRight];
  return r;
}

// Where the halo from direction d sits in the forward output (lens = the forward's recv_lens).
Rect halo_rect(int d, int64_t h, int64_t w, const std::vector<int64_t>& lens) {
  Rect r{lens[kTop], h, lens[kLeft], w};
  if (vertical(d) < 0) r.row0 = 0, r.rows = lens[kTop];
  if (vertical(d) > 0) r.row0 = lens[kTop] + h, r.rows = lens[kBottom];
  if (horizontal(d) < 0) r.col0 = 0, r.cols = lens[kLeft];
  if (horizontal(d) > 0) r.col0 = lens[kLeft] + w, r.cols = lens[kRight];
  return r;
}

// dst[rect `to`] (+)= src[rect `from`] for every (n, c) plane; both rects have one size.
template <bool kAdd>
void blit(Tensor& dst, Rect to, const Tensor& src, Rect from) {
  const int64_t planes = dst.dim(0) * dst.dim(1);
  const int64_t dh = dst.dim(2), dw = dst.dim(3), sh = src.dim(2), sw = src.dim(3);
  float* d = dst.f32();
  const float* s = src.f32();
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < from.rows; ++i) {
      float* o = d + (p * dh + to.row0 + i) * dw + to.col0;
      const float* x = s + (p * sh + from.row0 + i) * sw + from.col0;
      for (int64_t j = 0; j < from.cols; ++j) o[j] = kAdd ? o[j] + x[j] : x[j];
    }
}

}  // namespace

Tensor neighbor_exchange_v2_grad(const Tensor& dout, const NeighborExchangeV2GradOptions& o) {
  SF_ENFORCE(dout.rank() == 4 && o.send_rank_ids.size() == kDirs && o.recv_rank_ids.size() == kDirs &&
                 o.send_lens.size() == 4 && o.recv_lens.size() == 4,
             InvalidArgument, "NeighborExchangeV2Grad: needs a 4-D dout, 8 rank ids and 4 lens per list, got {}",
             dout.describe());
  // Halos exist only on sides with a neighbour (the forward's shape rule).
  const std::vector<int64_t> sl = {o.send_rank_ids[0] >= 0 ? o.send_lens[kTop] : 0,
                                   o.send_rank_ids[4] >= 0 ? o.send_lens[kBottom] : 0,
                                   o.send_rank_ids[6] >= 0 ? o.send_lens[kLeft] : 0,
                                   o.send_rank_ids[2] >= 0 ? o.send_lens[kRight] : 0};
  const int64_t n = dout.dim(0), c = dout.dim(1);
  const int64_t h = dout.dim(2) - sl[kTop] - sl[kBottom], w = dout.dim(3) - sl[kLeft] - sl[kRight];
  comm::NeighborExchangeOptions ne;
  ne.group = o.group;
  ne.timeout = o.timeout;
  std::vector<Tensor> halos;
  for (int d = 0; d < kDirs; ++d) {
    if (o.send_rank_ids[d] < 0) continue;
    const Rect r = halo_rect(d, h, w, sl);
    Tensor halo({n, c, r.rows, r.cols});
    blit<false>(halo, {0, r.rows, 0, r.cols}, dout, r);
    ne.send_rank_ids.push_back(o.send_rank_ids[d]);
    ne.send_shapes.push_back(halo.shape());
    halos.push_back(std::move(halo));
  }
  std::vector<int> slice_dirs;
  for (int d = 0; d < kDirs; ++d) {
    const int e = opposite(d);
    if (o.recv_rank_ids[e] < 0) continue;
    const Rect r = slice_rect(e, h, w, o.recv_lens);
    ne.recv_rank_ids.push_back(o.recv_rank_ids[e]);
    ne.recv_shapes.push_back({n, c, r.rows, r.cols});
    slice_dirs.push_back(e);
  }
  const std::vector<Tensor> grads = comm::neighbor_exchange(halos, ne);
  Tensor dx({n, c, h, w});
  blit<false>(dx, {0, h, 0, w}, dout, {sl[kTop], h, sl[kLeft], w});
  for (size_t k = 0; k < grads.size(); ++k) {
    const Rect r = slice_rect(slice_dirs[k], h, w, o.recv_lens);
    blit<true>(dx, r, grads[k], {0, r.rows, 0, r.cols});
  }
  return dx;
}

}  // namespace sf
