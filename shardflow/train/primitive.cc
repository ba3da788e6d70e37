#include <shardflow/train/primitive.h>

namespace sf {

Primitive::Primitive(std::string instance_name, std::string op, Attrs attrs)
    : instance_(std::move(instance_name)), op_(std::move(op)), attrs_(std::move(attrs)) {}

Primitive& Primitive::shard(std::vector<TensorStrategy> in_strategy, std::vector<TensorStrategy> out_strategy) {
  strategy_ = OpStrategy{std::move(in_strategy), std::move(out_strategy)};
  return *this;
}

Value Primitive::operator()(GraphBuilder& b, std::vector<Value> inputs, const Attrs& extra) {
  Attrs attrs = attrs_;
  for (const auto& [key, value] : extra.values()) attrs.set(key, value);
  if (!instance_.empty()) b.push_scope(instance_);
  const Value v = b.op(op_, std::move(inputs), std::move(attrs));
  if (!instance_.empty()) b.pop_scope();
  nodes_.insert(b.graph().node(v.id).name);
  return v;
}

}  // namespace sf
