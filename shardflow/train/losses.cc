#include <shardflow/train/losses.h>

namespace sf::nn {

Value CrossEntropyLoss::operator()(GraphBuilder& b, Value logits, Value labels) const {
  b.push_scope("loss");
  Value v = b.softmax_cross_entropy(logits, labels);
  b.pop_scope();
  return v;
}

Value MSELoss::operator()(GraphBuilder& b, Value pred, Value target) const {
  b.push_scope("loss");
  Value v = b.mse_loss(pred, target);
  b.pop_scope();
  return v;
}

}  // namespace sf::nn
