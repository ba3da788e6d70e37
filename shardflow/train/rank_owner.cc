#include <shardflow/train/rank_owner.h>

#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>

namespace sf::nn {

void RankOwner::claim(const std::string& what, const std::string& rule) {
  std::shared_ptr<comm::RankContext> rank = comm::current_rank_shared();
  if (!rank) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<comm::RankContext> owner = owner_.lock();
  SF_ENFORCE(!owner || owner == rank, InvalidArgument, "{} is already used by rank {} in this process; {}", what,
             owner_rank_, rule);
  owner_ = rank;
  owner_rank_ = rank->rank();
}

}  // namespace sf::nn
