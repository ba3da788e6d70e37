#include <shardflow/train/rank_local_tensors.h>

#include <shardflow/comm/rank_context.h>

namespace sf::detail {

Rank this_rank() {
  const comm::RankContext* r = comm::current_rank_or_null();
  return r ? Rank{r->rank(), r->size()} : Rank{};
}

std::set<std::string> unstepped(nn::Cell& net, nn::Optimizer& optimizer) {
  std::set<std::string> stepped, out;
  for (const Parameter& p : optimizer.parameters()) stepped.insert(p.name());
  for (const Parameter& p : net.get_parameters())
    if (!stepped.count(p.name())) out.insert(p.name());
  return out;
}

ckpt::ShardedTensor rank_row(const std::string& name, const Tensor& t, Rank r) {
  Shape row{1}, global{r.ranks};
  std::vector<int64_t> offset{r.rank};
  for (int64_t d : t.shape()) {
    row.push_back(d);
    global.push_back(d);
    offset.push_back(0);
  }
  return ckpt::ShardedTensor::block(kRankLocal + name, t.view(row), global, offset);
}

}  // namespace sf::detail
