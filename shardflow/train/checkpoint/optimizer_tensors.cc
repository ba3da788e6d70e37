#include <shardflow/train/checkpoint/optimizer_tensors.h>

namespace sf::ckpt {

namespace {

constexpr const char* kGlobalStep = "global_step";

// A parameter's block as a ShardedTensor named `name` holding `value` (the parameter's own
// value, or a state tensor of the same block).
ShardedTensor block_of(const std::string& name, const Parameter& p, const Tensor& value) {
  if (value.shape() != p.value().shape()) return ShardedTensor::whole(name, value);
  if (!p.sharded()) return ShardedTensor::whole(name, value);
  return ShardedTensor::block(name, value, p.shape(), p.offset());
}

}  // namespace

const Parameter* owner_of(const std::string& state_name, const ParameterList& params) {
  for (const Parameter& p : params) {
    const std::string& n = p.name();
    if (state_name.size() > n.size() && state_name.compare(state_name.size() - n.size(), n.size(), n) == 0 &&
        state_name[state_name.size() - n.size() - 1] == '.')
      return &p;
  }
  return nullptr;
}

std::vector<ShardedTensor> optimizer_tensors(nn::Optimizer& optimizer) {
  std::vector<ShardedTensor> out;
  const ParameterList& params = optimizer.parameters();
  for (const Parameter& p : params) out.push_back(block_of(p.name(), p, p.value()));
  for (auto& [name, t] : optimizer.state()) out.push_back(parameter_block(name, t, params));
  out.push_back(ShardedTensor::whole(
      kGlobalStep, Tensor::from_vector({}, std::vector<int32_t>{static_cast<int32_t>(optimizer.global_step())})));
  return out;
}

ShardedTensor parameter_block(const std::string& name, const Tensor& value, const ParameterList& params) {
  for (const Parameter& p : params)
    if (p.name() == name) return block_of(name, p, value);
  const Parameter* p = owner_of(name, params);
  return p ? block_of(name, *p, value) : ShardedTensor::whole(name, value);
}

void load_optimizer_tensors(CheckpointReader& ckpt, nn::Optimizer& optimizer) {
  std::vector<ShardedTensor> targets = optimizer_tensors(optimizer);
  std::vector<WantedTensor> wanted;
  for (const ShardedTensor& t : targets) wanted.push_back({t.name, t.global, t.local.dtype()});
  ckpt.check_tensors(wanted, /*allow_unexpected=*/true);
  // Everything is read before the first value changes: a failed read leaves the optimizer as is.
  std::vector<Tensor> loaded;
  for (const ShardedTensor& t : targets) loaded.push_back(ckpt.read(t.name, t.layout, t.layout_rank));
  for (size_t i = 0; i + 1 < targets.size(); ++i) targets[i].local.copy_from(loaded[i]);
  optimizer.set_global_step(loaded.back().i32()[0]);
}

}  // namespace sf::ckpt
