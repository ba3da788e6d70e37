// README's functional training form (seed 004's loop: value_and_grad, then the optimizer's
// step), run on a small MLP and synthetic data. Fails unless the loss goes down.
#include <iostream>

#include <shardflow/shardflow.h>

#include "examples/snippets/synthetic_data.h"

int main() try {
  sf::set_seed(1);
  sf::nn::Mlp net(4, {16}, 3);
  const sf::dataset::Dataset data_set = snippets::synthetic_dataset(64, 16);
  sf::dataset::BatchIterator first_batch = data_set.iterator(0);
  const std::vector<sf::Tensor>& batch = *first_batch.next();
  const sf::Tensor& data = batch[0];
  const sf::Tensor& label = batch[1];
  // [loop]
  auto grad_fn = sf::value_and_grad(
      [&](sf::GraphBuilder& b, const std::vector<sf::Value>& in) {
        return sf::nn::CrossEntropyLoss()(b, net(b, in[0]), in[1]);
      },
      net.trainable_params());
  sf::nn::SGD optimizer(net.trainable_params(), 1e-2f);
  auto [loss, grads] = grad_fn({data, label});
  optimizer.step(grads);
  // [loop]
  // The same step for 20 more epochs: the loss of the first batch must have gone down.
  float last = loss;
  for (int64_t epoch = 1; epoch <= 20; ++epoch) {
    sf::dataset::BatchIterator it = data_set.iterator(epoch);
    while (const std::vector<sf::Tensor>* b = it.next()) {
      auto [step_loss, step_grads] = grad_fn({(*b)[0], (*b)[1]});
      optimizer.step(step_grads);
      last = step_loss;
    }
  }
  std::cout << "loss " << loss << " -> " << last << std::endl;
  return last < loss ? 0 : 1;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
