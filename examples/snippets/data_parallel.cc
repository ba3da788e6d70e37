// README's data-parallel training (seed 004): the mode set, the dataset sharded by rank, one
// epoch of Model::train on each rank. Run with --devices N, or under sfrun or mpirun.
#include <iostream>

#include <shardflow/shardflow.h>

namespace {

// Seed 004's network.
class Network : public sf::nn::Cell {
 public:
  Network() {
    flatten_ = register_cell("flatten", std::make_shared<sf::nn::Flatten>());
    layers_ = register_cell("dense_relu_sequential", std::make_shared<sf::nn::SequentialCell>(std::vector<sf::nn::CellPtr>{
        std::make_shared<sf::nn::Dense>(28 * 28, 512, "normal", "zeros"), std::make_shared<sf::nn::ReLU>(),
        std::make_shared<sf::nn::Dense>(512, 512, "normal", "zeros"), std::make_shared<sf::nn::ReLU>(),
        std::make_shared<sf::nn::Dense>(512, 10, "normal", "zeros")}));
  }
  sf::Value construct(sf::GraphBuilder& b, sf::Value x) override { return (*layers_)(b, (*flatten_)(b, x)); }

 private:
  sf::nn::CellPtr flatten_, layers_;
};

}  // namespace

int main(int argc, char** argv) try {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  // [data_parallel]
  sf::comm::init(argc, argv);                       // --devices 8, or sfrun / mpirun ranks
  sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kDataParallel, .gradients_mean = true});
  sf::comm::run_ranks([&] {                          // once per rank, each on its own thread
    Network net;
    auto data_set = sf::dataset::Dataset::mnist(dir, "train", sf::comm::get_group_size(), sf::comm::get_rank())
                        .map({sf::dataset::Rescale(1.0f / 255.0f, 0.0f)}, "image")
                        .map({sf::dataset::TypeCast(sf::DType::kI32)}, "label")
                        .batch(32);
    sf::Model model(net, sf::nn::CrossEntropyLoss(), sf::nn::SGD(net.trainable_params(), 1e-2f));
    model.train(1, data_set, {std::make_shared<sf::LossMonitor>(50)});
  });
  // [data_parallel]
  sf::comm::release();
  return 0;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
