#include <shardflow/train/checkpoint/gather_text.h>

#include <algorithm>
#include <cstring>

#include <shardflow/comm/all_gather.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>

namespace sf::ckpt {

std::vector<std::string> all_gather_text(const std::string& text) {
  comm::RankContext* rank = comm::current_rank_or_null();
  if (rank == nullptr || rank->size() == 1) return {text};
  SF_ENFORCE(text.size() < (size_t{1} << 30), InvalidArgument, "a checkpoint control message of {} bytes is too long",
             text.size());
  const Tensor lengths =
      comm::all_gather(Tensor::from_vector({1}, std::vector<int32_t>{static_cast<int32_t>(text.size())}), {});
  int64_t longest = 0;
  for (int64_t r = 0; r < lengths.numel(); ++r) longest = std::max<int64_t>(longest, lengths.i32()[r]);
  const int64_t words = std::max<int64_t>(1, (longest + 3) / 4);
  Tensor mine = Tensor::zeros({1, words}, DType::kI32);
  std::memcpy(mine.raw(), text.data(), text.size());
  const Tensor all = comm::all_gather(mine, {});
  std::vector<std::string> out;
  const auto* bytes = static_cast<const char*>(all.raw());
  for (int64_t r = 0; r < lengths.numel(); ++r)
    out.emplace_back(bytes + r * words * 4, static_cast<size_t>(lengths.i32()[r]));
  return out;
}

}  // namespace sf::ckpt
