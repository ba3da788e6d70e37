#include "train/mlp.h"

namespace sf::nn {

Mlp::Mlp(int64_t in, const std::vector<int64_t>& hidden, int64_t out, const std::string& weight_init,
         const std::string& bias_init) {
  std::vector<CellPtr> cells;
  for (int64_t h : hidden) {
    cells.push_back(std::make_shared<Dense>(in, h, weight_init, bias_init));
    cells.push_back(std::make_shared<ReLU>());
    in = h;
  }
  cells.push_back(std::make_shared<Dense>(in, out, weight_init, bias_init));
  flatten_ = register_cell("flatten", std::make_shared<Flatten>());
  layers_ = register_cell("dense_relu_sequential", std::make_shared<SequentialCell>(cells));
}

Value Mlp::construct(GraphBuilder& b, Value x) { return (*layers_)(b, (*flatten_)(b, x)); }

}  // namespace sf::nn
