#include <shardflow/train/rank_local_tensors.h>

namespace sf::detail {

Row local_row(Model& model) {
  const auto [index, count] = model.replica();
  return {index, count};
}

std::set<std::string> rank_local_names(Model& model) {
  if (local_row(model).count < 2) return {};
  std::set<std::string> stepped, out;
  for (const Parameter& p : model.optimizer().parameters()) stepped.insert(p.name());
  for (const Parameter& p : model.held_parameters())
    if (!stepped.count(p.name())) out.insert(p.name());
  return out;
}

ckpt::ShardedTensor rank_row(const std::string& name, const Tensor& t, Row r) {
  Shape row{1}, global{r.count};
  std::vector<int64_t> offset{r.index};
  for (int64_t d : t.shape()) {
    row.push_back(d);
    global.push_back(d);
    offset.push_back(0);
  }
  return ckpt::ShardedTensor::block(kRankLocal + name, t.view(row), global, offset);
}

}  // namespace sf::detail
