#include <shardflow/comm/broadcast.h>

#include <bit>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/detail/async.h>
#include <shardflow/comm/detail/blocks.h>
#include <shardflow/comm/detail/by_reference.h>
#include <shardflow/comm/detail/call.h>
#include <shardflow/comm/detail/native.h>

namespace sf::comm {

namespace {

constexpr std::string_view kOp = "Broadcast";

Algorithm validate(const Tensor& input, const BroadcastOptions& o) {
  detail::check_common(kOp, o.group, o.timeout);
  detail::check_input(kOp, input);
  SF_ENFORCE(o.root >= 0 && o.root < o.group.size(), InvalidArgument,
             "{} (group '{}'): root {} is outside the group's ranks [0, {})", kOp, o.group.name(), o.root,
             o.group.size());
  return resolve_algorithm(Collective::kBroadcast, o.algorithm, static_cast<int64_t>(input.nbytes()), o.group.size(),
                           transport_caps(o.group.transport(), Collective::kBroadcast, input.numel()));
}

detail::Signature signature(const Tensor& input, const BroadcastOptions& o) {
  return detail::Signature::of(kOp, input).with("root", o.root);
}

// kByReference: the root passes its input itself; every other rank copies it where it lies
// and says so, and the root returns once all have (its input must not change before).
Tensor by_reference(detail::Call& call, const Tensor& input, int root) {
  Tensor out = Tensor::empty(input.shape(), input.dtype());
  if (call.rank() == root) {
    detail::send_to_all(call, input, 0);
    detail::copy_to_output(out, 0, input, 0, input.numel(), out.nbytes());
    detail::wait_done(call, detail::others(call), 1);
  } else {
    Tensor from_root = call.recv(root, 0);
    SF_ENFORCE(from_root.numel() == input.numel() && from_root.dtype() == input.dtype(), ShapeError,
               "{}: the root passed {} where this rank has {}", call.where(), from_root.describe(), input.describe());
    detail::copy_to_output(out, 0, from_root, 0, input.numel(), out.nbytes());
    detail::stream_fence();
    from_root = Tensor();
    detail::signal_done(call, {root}, 1);
  }
  return out;
}

Tensor run(const Tensor& input, const BroadcastOptions& o, Algorithm algo, uint32_t seq) {
  detail::Call call(signature(input, o), o.group, seq, o.timeout);
  const int n = call.size();
  if (n == 1 || input.numel() == 0) return input.clone();
  if (algo == Algorithm::kByReference) return by_reference(call, input, o.root);
  BufferPool& pool = BufferPool::global();
  Tensor out = Tensor::empty(input.shape(), input.dtype());
  // Tree over ranks relative to the root: v's parent is v minus its lowest set bit; its
  // children are v + m for the powers of two m below that bit (every power for the root).
  const int v = (call.rank() - o.root + n) % n;
  const int low = v == 0 ? std::bit_ceil(static_cast<unsigned>(n)) : (v & -v);
  std::vector<int> children;  // largest subtree first
  for (int m = low >> 1; m >= 1; m >>= 1)
    if (v + m < n) children.push_back((v + m + o.root) % n);
  const int parent = v == 0 ? -1 : (v - low + o.root) % n;
  const int64_t count = input.numel(), seg = call.segment_elems(input.dtype());
  for (int64_t k = 0; k < std::max<int64_t>(1, (count + seg - 1) / seg); ++k) {
    detail::Range part = detail::segment_of({0, count}, seg, k);
    Tensor buf;
    if (parent < 0) {
      buf = detail::pooled_copy(input, part.begin, part.size());
    } else {
      buf = call.recv(parent);
      SF_ENFORCE(buf.numel() == part.size() && buf.dtype() == input.dtype(), ShapeError,
                 "{}: received {} from rank {} where {} elements of {} were expected", call.where(), buf.describe(),
                 parent, part.size(), dtype_name(input.dtype()));
    }
    // Forward first (one reader reference per child), then copy out, then drop our own.
    pool.retain(buf, static_cast<int>(children.size()));
    for (int c : children) call.send(c, buf);
    detail::copy_elems(out, part.begin, buf, 0, part.size());
    pool.release(buf);
  }
  return out;
}

bool trivial(const Tensor& input, const BroadcastOptions& o) { return o.group.size() == 1 || input.numel() == 0; }

// The backend fills the non-roots' outputs; the root's own is a copy of its input, made while
// the broadcast is under way (the backend only reads the root's input).
NativeRequest native_request(const Tensor& input, const BroadcastOptions& o) {
  return {.collective = Collective::kBroadcast, .root = o.root, .input = input,
          .output = Tensor::empty(input.shape(), input.dtype())};
}

}  // namespace

Tensor broadcast(const Tensor& input, const BroadcastOptions& opts) {
  const Algorithm algo = validate(input, opts);
  const uint32_t seq = opts.group.next_sequence();
  if (algo != Algorithm::kNative || trivial(input, opts)) return run(input, opts, algo, seq);
  NativeRequest req = native_request(input, opts);
  Tensor out = req.output;
  const bool root = opts.group.rank() == opts.root;
  auto copy_own = [out, input, root]() mutable {
    if (root) out.copy_from(input);
  };
  return detail::run_native(signature(input, opts), opts.group, seq, opts.timeout, std::move(req), copy_own,
                            [out] { return out; });
}

Work broadcast_async(const Tensor& input, const BroadcastOptions& opts) {
  const Algorithm algo = validate(input, opts);
  if (algo != Algorithm::kNative || trivial(input, opts)) return detail::submit_collective(input, opts, algo, run);
  NativeRequest req = native_request(input, opts);
  Tensor out = req.output;
  const bool root = opts.group.rank() == opts.root;
  auto copy_own = [out, input, root]() mutable {
    if (root) out.copy_from(input);
  };
  return detail::submit_native(signature(input, opts), opts.group, opts.timeout, std::move(req), copy_own,
                               [out] { return out; });
}

}  // namespace sf::comm
