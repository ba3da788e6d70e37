// The README's quickstart: seed 004's network built from cells and trained for one epoch
// on Fashion-MNIST with Model::train. Built and run by the tests, so the README cannot drift.
//
//   ./build/examples/quickstart [/usr/share/datasets/fashion-mnist]
// [quickstart]
#include <iostream>

#include <shardflow/shardflow.h>

using namespace sf;

class Network : public nn::Cell {
 public:
  Network() {
    flatten_ = register_cell("flatten", std::make_shared<nn::Flatten>());
    layers_ = register_cell("dense_relu_sequential", std::make_shared<nn::SequentialCell>(std::vector<nn::CellPtr>{
        std::make_shared<nn::Dense>(28 * 28, 512, "normal", "zeros"), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Dense>(512, 512, "normal", "zeros"), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Dense>(512, 10, "normal", "zeros")}));
  }
  Value construct(GraphBuilder& b, Value x) override { return (*layers_)(b, (*flatten_)(b, x)); }

 private:
  nn::CellPtr flatten_, layers_;
};

int main(int argc, char** argv) try {
  set_seed(1);
  using namespace sf::dataset;
  Dataset train_set = Dataset::mnist(argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist", "train")
                          .map({Rescale(1.0f / 255.0f, 0.0f), Normalize({0.1307f}, {0.3081f}), HWC2CHW()}, "image")
                          .map({TypeCast(DType::kI32)}, "label")
                          .batch(32);
  Network net;
  Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 1e-2f));
  model.train(1, train_set, {std::make_shared<LossMonitor>(200)});
  return 0;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
// [quickstart]
