#include <shardflow/comm/detail/neighbor_message.h>

#include <string>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/core/brief.h>

namespace sf::comm::detail {

Tensor shaped_message(const Shape& shape, DType dtype) {
  const int64_t n = sf::numel(shape);
  if (n == 0) return Tensor(shape, dtype);
  return BufferPool::global().acquire(dtype, n).view(shape);
}

Tensor recv_shaped(Call& call, const Group& group, int peer, uint8_t slot, const Shape& shape, DType dtype,
                   std::string_view what) {
  Tensor got = call.recv(peer, slot);
  if (got.shape() == shape && got.dtype() == dtype) return got;
  const std::string got_desc = got.describe();
  BufferPool::global().release(got);
  SF_THROW(ShapeError, "{}: {} is rank {}, which sent {} but this rank declared {}{}", call.where(), what,
           group.world_rank(peer), got_desc, dtype_name(dtype), brief_shape(shape));
}

}  // namespace sf::comm::detail
