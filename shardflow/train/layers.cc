#include <shardflow/train/layers.h>

#include <fmt/format.h>

namespace sf::nn {

Dense::Dense(int64_t in, int64_t out, const std::string& weight_init, const std::string& bias_init, bool has_bias) {
  weight_ = register_parameter("weight", {out, in}, weight_init);
  if (has_bias)  // the bias's fan-in is the weight's
    bias_ = register_parameter("bias", {out}, bias_init == "dense_bias" ? fmt::format("dense_bias:{}", in) : bias_init);
}

Value Dense::construct(GraphBuilder& b, Value x) {
  Value y = b.matmul(x, param(b, weight_), false, true);
  return bias_.defined() ? b.bias_add(y, param(b, bias_)) : y;
}

SequentialCell::SequentialCell(std::initializer_list<CellPtr> cells) : SequentialCell(std::vector<CellPtr>(cells)) {}

SequentialCell::SequentialCell(const std::vector<CellPtr>& cells) {
  for (size_t i = 0; i < cells.size(); ++i) cells_.push_back(register_cell(std::to_string(i), cells[i]));
}

Value SequentialCell::construct(GraphBuilder& b, Value x) {
  for (auto& c : cells_) x = (*c)(b, x);
  return x;
}

}  // namespace sf::nn
