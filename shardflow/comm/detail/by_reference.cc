#include <shardflow/comm/detail/by_reference.h>

#include <algorithm>
#include <cstring>

#include <shardflow/comm/detail/blocks.h>
#include <shardflow/core/error.h>

namespace sf::comm::detail {

namespace {
const std::byte* at(const Tensor& t, int64_t elem) {
  return static_cast<const std::byte*>(t.raw()) + elem * static_cast<int64_t>(dtype_size(t.dtype()));
}
}  // namespace

void copy_to_output(Tensor& dst, int64_t dst_off, const Tensor& src, int64_t src_off, int64_t n, size_t out_bytes) {
  if (out_bytes < kStreamBytes) {
    copy_elems(dst, dst_off, src, src_off, n);
    return;
  }
  const int64_t w = static_cast<int64_t>(dtype_size(dst.dtype()));
  stream_copy(static_cast<std::byte*>(dst.raw()) + dst_off * w, at(src, src_off), static_cast<size_t>(n * w));
}

void send_to_all(Call& call, const Tensor& t, uint8_t slot) {
  for (int q : others(call)) call.send(q, t, slot);
}

std::vector<Tensor> recv_from_all(Call& call, const Tensor& mine, uint8_t slot) {
  std::vector<Tensor> all(call.size());
  all[call.rank()] = mine;
  for (int q : others(call)) {
    all[q] = call.recv(q, slot);
    SF_ENFORCE(all[q].numel() == mine.numel() && all[q].dtype() == mine.dtype(), ShapeError,
               "{}: rank {} passed {} where this rank has {}", call.where(), q, all[q].describe(), mine.describe());
  }
  return all;
}

void signal_done(Call& call, const std::vector<int>& peers, uint8_t slot) {
  static const Tensor kDone({0}, DType::kI32);  // read-only and empty: shared by every send
  for (int q : peers) call.send(q, kDone, slot);
}

void wait_done(Call& call, const std::vector<int>& waits_for, uint8_t slot) {
  for (int q : waits_for) call.recv(q, slot);
}

std::vector<int> others(const Call& call) {
  std::vector<int> out;
  for (int q = 1; q < call.size(); ++q) out.push_back((call.rank() + q) % call.size());
  return out;
}

void reduce_in_order(ReduceOp op, DType dtype, void* dst, const std::vector<const Tensor*>& src, int64_t begin,
                     int64_t end) {
  const int64_t w = static_cast<int64_t>(dtype_size(dtype));
  std::byte* d = static_cast<std::byte*>(dst);
  if (src.size() == 1) {
    std::memcpy(d, at(*src[0], begin), static_cast<size_t>((end - begin) * w));
    return;
  }
  // Chunk by chunk, so the partial result stays in L1 across the n-1 passes over it.
  constexpr int64_t kChunkBytes = 16 << 10;
  const int64_t chunk = kChunkBytes / w;
  for (int64_t b = begin; b < end; b += chunk) {
    const int64_t len = std::min(chunk, end - b);
    std::byte* out = d + (b - begin) * w;
    reduce(op, dtype, out, at(*src[0], b), at(*src[1], b), len);
    for (size_t j = 2; j < src.size(); ++j) reduce(op, dtype, out, out, at(*src[j], b), len);
  }
}

}  // namespace sf::comm::detail
