// The library guide's program (docs/library_guide.md) on one device: a 3-layer MLP on
// Fashion-MNIST with Adam — train, evaluate, checkpoint, resume — and the check that the
// resumed run ends with the same parameters, bit for bit, as the uninterrupted one.
#include <cstdlib>
#include <iostream>

// [include]
#include <shardflow/shardflow.h>
// [include]

// [network]
// A 3-layer MLP: 784 -> 256 -> 128 -> 10.
class Mlp3 : public sf::nn::Cell {
 public:
  Mlp3() {
    layers_ = register_cell("layers", std::make_shared<sf::nn::SequentialCell>(std::vector<sf::nn::CellPtr>{
        std::make_shared<sf::nn::Flatten>(),
        std::make_shared<sf::nn::Dense>(28 * 28, 256), std::make_shared<sf::nn::ReLU>(),
        std::make_shared<sf::nn::Dense>(256, 128), std::make_shared<sf::nn::ReLU>(),
        std::make_shared<sf::nn::Dense>(128, 10)}));
  }
  sf::Value construct(sf::GraphBuilder& b, sf::Value x) override { return (*layers_)(b, x); }

 private:
  sf::nn::CellPtr layers_;
};
// [network]

// [data]
// Debian's Fashion-MNIST (package dataset-fashion-mnist): images scaled to [0, 1] and
// normalized, labels as int32; the first `rows` rows; one shard of `num_shards` when sharded.
sf::dataset::Dataset fashion_mnist(const std::string& usage, int64_t rows, int num_shards = 1, int shard_id = 0) {
  using namespace sf::dataset;
  return Dataset::mnist("/usr/share/datasets/fashion-mnist", usage, num_shards, shard_id)
      .map({Rescale(1.0f / 255.0f, 0.0f), Normalize({0.2860f}, {0.3530f}), HWC2CHW()}, "image")
      .map({TypeCast(sf::DType::kI32)}, "label")
      .take(rows);
}
// [data]

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
