// The consumer project's own core/error.h: a user header with the same relative path as one of
// the library's. The library must never pick it up instead of <shardflow/core/error.h>.
#pragma once

namespace app {
// main.cc uses this, so the test fails to compile if this header is not the one included.
constexpr const char* kAppErrorPrefix = "consumer";
}  // namespace app
