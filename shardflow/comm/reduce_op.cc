#include <shardflow/comm/reduce_op.h>

#include <algorithm>
#include <type_traits>

namespace sf::comm {

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
  }
  return "invalid";
}

bool is_valid(ReduceOp op) { return static_cast<uint8_t>(op) <= static_cast<uint8_t>(ReduceOp::kMin); }

namespace {

template <class T, class F>
void apply(void* dst, const void* a, const void* b, int64_t n, F f) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (int64_t i = 0; i < n; ++i) d[i] = f(x[i], y[i]);
}

template <class T>
void reduce_typed(ReduceOp op, void* dst, const void* a, const void* b, int64_t n) {
  switch (op) {
    case ReduceOp::kSum:
      if constexpr (std::is_same_v<T, int32_t>)
        apply<T>(dst, a, b, n, [](T x, T y) { return static_cast<T>(static_cast<uint32_t>(x) + static_cast<uint32_t>(y)); });
      else
        apply<T>(dst, a, b, n, [](T x, T y) { return x + y; });
      return;
    case ReduceOp::kProd:
      if constexpr (std::is_same_v<T, int32_t>)
        apply<T>(dst, a, b, n, [](T x, T y) { return static_cast<T>(static_cast<uint32_t>(x) * static_cast<uint32_t>(y)); });
      else
        apply<T>(dst, a, b, n, [](T x, T y) { return x * y; });
      return;
    case ReduceOp::kMax: apply<T>(dst, a, b, n, [](T x, T y) { return std::max(x, y); }); return;
    case ReduceOp::kMin: apply<T>(dst, a, b, n, [](T x, T y) { return std::min(x, y); }); return;
  }
}

}  // namespace

void reduce(ReduceOp op, DType dtype, void* dst, const void* a, const void* b, int64_t n) {
  if (dtype == DType::kF32)
    reduce_typed<float>(op, dst, a, b, n);
  else
    reduce_typed<int32_t>(op, dst, a, b, n);
}

}  // namespace sf::comm
