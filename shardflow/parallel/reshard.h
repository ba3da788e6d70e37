/// @file
/// Executing a reshard plan (parallel/reshard_plan.h): copy_runs fills one target rank's local
/// block from a byte source — memory here, a checkpoint's rank files at load — and reshard does
/// it for every target rank from the source ranks' local tensors in memory. Both go through the
/// same runs, so what the in-memory reshard is tested to do is what a loader does.
///
/// @code
///   // 8 ranks under seed 001's layout -> 3 ranks holding the tensor whole
///   std::vector<sf::Tensor> out = sf::reshard(locals, {784, 512}, from, to);
///   // A loader, rank t of the new job: read only the bytes it needs
///   sf::TargetPlan p = sf::plan_reshard_target(global, dtype, from, to, t);
///   sf::Tensor mine = sf::Tensor::empty(p.box.shape(), dtype);
///   sf::copy_runs(p, [&](int rank, int64_t offset, int64_t bytes, void* dst) { ... pread ... },
///                 mine.raw(), static_cast<int64_t>(mine.nbytes()));
/// @endcode
///
/// Threading: pure functions; `read` is called from the calling thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <shardflow/core/shape.h>
#include <shardflow/core/tensor.h>
#include <shardflow/parallel/reshard_plan.h>
#include <shardflow/parallel/tensor_layout.h>

namespace sf {

/// Reads `bytes` bytes at byte `offset` of source rank `source_rank`'s local block (row-major)
/// into `dst`; throws (an sf::Error) if it cannot.
using ReadSourceBytes = std::function<void(int source_rank, int64_t offset, int64_t bytes, void* dst)>;

/// Fills `target`, the target rank's local block of `target_bytes` bytes, by one `read` per run of
/// `plan`, in the plan's order (by source rank, ascending offsets). Returns the bytes read, which
/// is plan.shard_bytes. Throws InvalidArgument if `target_bytes` is not the plan's shard bytes.
int64_t copy_runs(const TargetPlan& plan, const ReadSourceBytes& read, void* target, int64_t target_bytes);

/// The N target local tensors (by rank of `to`'s device matrix) of the tensor of shape `global`
/// whose M source local tensors (by rank of `from`'s) are `sources`: plan_reshard, then
/// copy_runs per target from memory. Throws as plan_reshard, and InvalidArgument if `sources` is
/// not one tensor per source rank, of one dtype, each of the shape its rank's block has.
std::vector<Tensor> reshard(const std::vector<Tensor>& sources, const Shape& global, const TensorLayout& from,
                            const TensorLayout& to);

}  // namespace sf
