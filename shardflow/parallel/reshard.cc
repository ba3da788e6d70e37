#include <shardflow/parallel/reshard.h>

#include <cstring>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf {

int64_t copy_runs(const TargetPlan& plan, const ReadSourceBytes& read, void* target, int64_t target_bytes) {
  SF_ENFORCE(target_bytes == plan.shard_bytes, InvalidArgument,
             "reshard: target rank {} has a block of {} bytes ({}) but was given {} bytes to fill", plan.target_rank,
             plan.shard_bytes, plan.box.str(), target_bytes);
  auto* out = static_cast<char*>(target);
  int64_t total = 0;
  for (const ReshardPiece& piece : plan.pieces)
    for (const ByteRun& run : piece.runs) {
      read(piece.source_rank, run.source_offset, run.bytes, out + run.target_offset);
      total += run.bytes;
    }
  return total;
}

std::vector<Tensor> reshard(const std::vector<Tensor>& sources, const Shape& global, const TensorLayout& from,
                            const TensorLayout& to) {
  const int64_t m = from.mesh().device_count();
  SF_ENFORCE(static_cast<int64_t>(sources.size()) == m, InvalidArgument,
             "reshard: layout {} has {} ranks but {} source tensors were given (one per rank)", from.spec(), m,
             sources.size());
  const DType dtype = sources[0].dtype();
  const ReshardPlan plan = plan_reshard(global, dtype, from, to);
  for (int64_t r = 0; r < m; ++r) {
    const Tensor& s = sources[static_cast<size_t>(r)];
    SF_ENFORCE(s.defined(), InvalidArgument, "reshard: the source tensor of rank {} is undefined", r);
    SF_ENFORCE(s.dtype() == dtype, InvalidArgument, "reshard: source rank {} holds {} but rank 0 holds {}", r,
               dtype_name(s.dtype()), dtype_name(dtype));
    const Shape want = plan.sources[static_cast<size_t>(r)].shape();
    SF_ENFORCE(s.shape() == want, InvalidArgument,
               "reshard: source rank {} holds shape {} but its block of global shape {} under {} has shape {}", r,
               brief_shape(s.shape()), brief_shape(global), from.spec(), brief_shape(want));
  }
  const ReadSourceBytes from_memory = [&](int rank, int64_t offset, int64_t bytes, void* dst) {
    std::memcpy(dst, static_cast<const char*>(sources[static_cast<size_t>(rank)].raw()) + offset,
                static_cast<size_t>(bytes));
  };
  std::vector<Tensor> out;
  out.reserve(plan.targets.size());
  for (const TargetPlan& t : plan.targets) {
    Tensor block = Tensor::empty(t.box.shape(), dtype);
    copy_runs(t, from_memory, block.raw(), static_cast<int64_t>(block.nbytes()));
    out.push_back(std::move(block));
  }
  return out;
}

}  // namespace sf
