#include <shardflow/comm/detail/signature.h>

#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::comm::detail {

Signature Signature::of(std::string_view op, const Tensor& t, bool shape_must_match) {
  Signature s;
  s.op = op;
  s.has_tensor = true;
  s.dtype = t.dtype();
  s.shape = t.shape();
  s.shape_must_match = shape_must_match;
  return s;
}

Signature Signature::bare(std::string_view op) {
  Signature s;
  s.op = op;
  return s;
}

Signature& Signature::with(std::string name, int64_t value) {
  params.emplace_back(std::move(name), value);
  return *this;
}

std::string Signature::describe() const {
  std::string out = op;
  if (has_tensor) out += fmt::format(" {}{}", dtype_name(dtype), shape_str(shape));
  for (const auto& [name, value] : params) out += fmt::format(" {}={}", name, value);
  return out;
}

bool Signature::matches(const Signature& o) const {
  if (op != o.op || has_tensor != o.has_tensor || params.size() != o.params.size()) return false;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].second != o.params[i].second) return false;
  if (!has_tensor) return true;
  return dtype == o.dtype && (!shape_must_match || shape == o.shape);
}

namespace {

// Layout: op length, op bytes (one per word), has_tensor, dtype, shape_must_match, ndim,
// dims (lo, hi words), param count, then per param: name length, name bytes, value (lo, hi).
void put64(std::vector<int32_t>& w, int64_t v) {
  w.push_back(static_cast<int32_t>(static_cast<uint64_t>(v) & 0xffffffffu));
  w.push_back(static_cast<int32_t>(static_cast<uint64_t>(v) >> 32));
}

void put_str(std::vector<int32_t>& w, const std::string& s) {
  w.push_back(static_cast<int32_t>(s.size()));
  for (unsigned char c : s) w.push_back(c);
}

class Reader {
 public:
  explicit Reader(const Tensor& t) : p_(t.data<int32_t>()), n_(t.numel()) {}
  int32_t word() {
    SF_ENFORCE(i_ < n_, InvalidArgument, "comm: truncated collective signature ({} words)", n_);
    return p_[i_++];
  }
  int64_t i64() {
    const auto lo = static_cast<uint32_t>(word());
    const auto hi = static_cast<uint32_t>(word());
    return static_cast<int64_t>((static_cast<uint64_t>(hi) << 32) | lo);
  }
  std::string str() {
    const int32_t len = word();
    SF_ENFORCE(len >= 0 && len <= n_ - i_, InvalidArgument, "comm: malformed collective signature");
    std::string s;
    for (int32_t k = 0; k < len; ++k) s.push_back(static_cast<char>(word()));
    return s;
  }
  bool done() const { return i_ == n_; }

 private:
  const int32_t* p_;
  int64_t n_;
  int64_t i_ = 0;
};

}  // namespace

Tensor Signature::encode() const {
  std::vector<int32_t> w;
  put_str(w, op);
  w.push_back(has_tensor);
  w.push_back(static_cast<int32_t>(dtype));
  w.push_back(shape_must_match);
  w.push_back(static_cast<int32_t>(shape.size()));
  for (int64_t d : shape) put64(w, d);
  w.push_back(static_cast<int32_t>(params.size()));
  for (const auto& [name, value] : params) {
    put_str(w, name);
    put64(w, value);
  }
  return Tensor::from_vector({static_cast<int64_t>(w.size())}, w);
}

Signature Signature::decode(const Tensor& t) {
  SF_ENFORCE(t.defined() && t.dtype() == DType::kI32 && t.rank() == 1, InvalidArgument,
             "comm: a collective signature must be a 1-d i32 tensor, got {}", t.defined() ? t.describe() : "none");
  Reader r(t);
  Signature s;
  s.op = r.str();
  s.has_tensor = r.word() != 0;
  const int32_t dt = r.word();
  SF_ENFORCE(dt == static_cast<int32_t>(DType::kF32) || dt == static_cast<int32_t>(DType::kI32), InvalidArgument,
             "comm: collective signature names unknown dtype {}", dt);
  s.dtype = static_cast<DType>(dt);
  s.shape_must_match = r.word() != 0;
  const int32_t ndim = r.word();
  SF_ENFORCE(ndim >= 0 && ndim <= 64, InvalidArgument, "comm: collective signature has {} dims", ndim);
  for (int32_t k = 0; k < ndim; ++k) s.shape.push_back(r.i64());
  const int32_t np = r.word();
  SF_ENFORCE(np >= 0 && np <= 64, InvalidArgument, "comm: collective signature has {} params", np);
  for (int32_t k = 0; k < np; ++k) {
    std::string name = r.str();
    s.params.emplace_back(std::move(name), r.i64());
  }
  SF_ENFORCE(r.done(), InvalidArgument, "comm: trailing words in a collective signature");
  return s;
}

std::string describe_mismatch(const std::vector<Signature>& by_rank, const std::vector<int>& world_ranks) {
  // Distinct signatures in order of first appearance, each with the ranks that sent it; a
  // hash map keeps this linear in a group of 100,000 ranks that all differ.
  std::vector<std::pair<std::string, std::vector<int>>> kinds;
  std::unordered_map<std::string, size_t> kind_of;
  for (size_t g = 0; g < by_rank.size(); ++g) {
    auto [it, added] = kind_of.try_emplace(by_rank[g].describe(), kinds.size());
    if (added) kinds.push_back({it->first, {}});
    kinds[it->second].second.push_back(world_ranks[g]);
  }
  // Bounded: a few kinds, each with a few ranks and its signature briefly (a 100,000-rank
  // group or a 10,000-dim shape must not make the error line huge).
  constexpr size_t kKinds = 4;
  std::vector<std::string> parts;
  for (size_t k = 0; k < kinds.size() && k < kKinds; ++k)
    parts.push_back(fmt::format("{} {} called {}", kinds[k].second.size() == 1 ? "rank" : "ranks",
                                brief_list(kinds[k].second, 4), brief_text(kinds[k].first, 80)));
  if (kinds.size() > kKinds) parts.push_back(fmt::format("{} more kinds", kinds.size() - kKinds));
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace sf::comm::detail
