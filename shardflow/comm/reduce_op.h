/// @file
/// Reduction operators of AllReduce and ReduceScatter (MindSpore's ReduceOp: SUM, PROD, MAX,
/// MIN) and the element kernel the algorithms apply. i32 sum and product wrap modulo 2^32, so
/// integer results never depend on the reduction order; f32 results do, which is why every
/// algorithm fixes one order (comm/algorithm.h).
///
/// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include <shardflow/core/dtype.h>

namespace sf::comm {

/// How a reduction combines the ranks' elements.
enum class ReduceOp : uint8_t {
  kSum,   ///< a + b
  kProd,  ///< a * b
  kMax,   ///< max(a, b)
  kMin,   ///< min(a, b)
};

/// "sum", "prod", "max" or "min".
std::string_view reduce_op_name(ReduceOp op);
/// True for the four ops above (an options struct may carry a value cast from an int).
bool is_valid(ReduceOp op);

/// dst[i] = a[i] op b[i] for i < n; dst may alias a or b.
void reduce(ReduceOp op, DType dtype, void* dst, const void* a, const void* b, int64_t n);

}  // namespace sf::comm
