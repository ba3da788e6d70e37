// The library guide's program (docs/library_guide.md) on one device: a 3-layer MLP on
// Fashion-MNIST with Adam — train, evaluate, checkpoint, resume — and the check that the
// resumed run ends with the same parameters, bit for bit, as the uninterrupted one.
#include <iostream>

// [include]
#include <shardflow/shardflow.h>
// [include]

#include "examples/snippets/guide_mlp.h"

int main() try {
  // [train]
  sf::set_seed(1);  // parameter initialization is drawn from this seed
  Mlp3 net;
  sf::Model model(net, sf::nn::CrossEntropyLoss(), sf::nn::Adam(net.trainable_params(), 1e-3f));
  sf::dataset::Dataset train_set = fashion_mnist("train", 3200).shuffle(7).batch(64);
  auto checkpoints = std::make_shared<sf::ModelCheckpoint>("mlp", "guide_checkpoints");  // after each epoch
  model.train(2, train_set, {std::make_shared<sf::LossMonitor>(25), checkpoints});
  // [train]

  // [eval]
  const double accuracy = model.eval_accuracy(fashion_mnist("test", 1000).batch(250, false));
  std::cout << "test accuracy: " << accuracy << std::endl;
  // [eval]

  // [resume]
  // Later, in another process: the same network and optimizer, the state after epoch 1, and
  // training goes on from epoch 2 (the dataset is positioned there, its shuffle included).
  Mlp3 resumed_net;
  sf::Model resumed(resumed_net, sf::nn::CrossEntropyLoss(), sf::nn::Adam(resumed_net.trainable_params(), 1e-3f));
  sf::load_into(resumed.optimizer(), checkpoints->saved().front());  // guide_checkpoints/mlp-1_50.ckpt
  resumed.train(2, fashion_mnist("train", 3200).shuffle(7).batch(64), {std::make_shared<sf::LossMonitor>(25)},
                /*initial_epoch=*/1);
  // [resume]

  // [load_params]
  // Parameters only, for evaluation: no optimizer needed. Missing, unexpected or mis-shaped
  // tensors are reported by name with the file.
  Mlp3 eval_net;
  sf::LoadReport report = sf::load_param_into_net(eval_net, checkpoints->saved().back());
  sf::Model evaluator(eval_net);
  std::cout << "reloaded accuracy: " << evaluator.eval_accuracy(fashion_mnist("test", 1000).batch(250, false))
            << " (" << report.ckpt_not_load.size() << " optimizer tensors not loaded)" << std::endl;
  // [load_params]

  // The resumed run must end where the uninterrupted one did, bit for bit.
  const sf::ParameterList a = net.trainable_params(), b = resumed_net.trainable_params();
  for (size_t i = 0; i < a.size(); ++i)
    if (!sf::bitwise_equal(a[i].value(), b[i].value())) {
      std::cerr << "error: the resumed run differs from the uninterrupted one in " << a[i].name() << std::endl;
      return 1;
    }
  std::cout << "resumed run equals the uninterrupted one" << std::endl;
  return 0;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
