#include <shardflow/train/mlp.h>

#include <fmt/format.h>

namespace sf::nn {

Mlp::Mlp(int64_t in, const std::vector<int64_t>& hidden, int64_t out) {
  std::vector<int64_t> sizes = hidden;
  sizes.push_back(out);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string init = fmt::format("dense_weight:{}", in);  // fan-in is dim 0 here
    weights_.push_back(&register_parameter(fmt::format("fc{}_weight", i + 1), {in, sizes[i]}, init));
    biases_.push_back(&register_parameter(fmt::format("fc{}_bias", i + 1), {sizes[i]}, init));
    in = sizes[i];
  }
}

Value Mlp::construct(GraphBuilder& b, Value x) {
  x = b.flatten(x);
  for (size_t i = 0; i < weights_.size(); ++i) {
    b.push_scope(fmt::format("fc{}", i + 1));
    x = b.bias_add(b.matmul(x, param(b, *weights_[i])), param(b, *biases_[i]));
    if (i + 1 < weights_.size()) x = b.relu(x);
    b.pop_scope();
  }
  return x;
}

}  // namespace sf::nn
