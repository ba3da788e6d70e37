// Trains a tiny net for a few steps with the installed library and prints the last loss.
// Built twice against the same install: by CMake (find_package) and by pkg-config.
#include "core/error.h"  // the consumer's own header, not the library's

#include <shardflow/shardflow.h>

#include <iostream>

int main() try {
  using namespace sf;
  nn::Mlp net(4, {8}, 3);
  auto ds = dataset::Dataset::generator(
                [](int64_t i) {
                  Tensor x({4});
                  for (int k = 0; k < 4; ++k) x.f32()[k] = static_cast<float>((i * 7 + k) % 5);
                  return std::vector<Tensor>{x, Tensor::from_vector({}, std::vector<int32_t>{static_cast<int32_t>(i % 3)})};
                },
                64, {"x", "y"})
                .batch(16);
  Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f));
  model.train(2, ds, {std::make_shared<LossMonitor>(4)});
  std::cout << app::kAppErrorPrefix << " ok" << std::endl;
  return 0;
} catch (const sf::Error& e) {
  std::cerr << app::kAppErrorPrefix << ": error: " << e.what() << std::endl;
  return 1;
}
