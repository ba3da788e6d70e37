// README's pipeline parallel (seed 003's calls): cells put on 2 stages, the loss cell wrapped
// in a PipelineCell of 2 micro-batches, each rank's optimizer given its stages' parameters.
// The network is a small stack of Dense cells named as the seed's ResNet's parts; it trains a
// few steps of synthetic data. Run with --devices 2, or 2 ranks under sfrun or mpirun.
#include <iostream>

#include <shardflow/shardflow.h>

#include "examples/snippets/synthetic_data.h"

namespace {

namespace nn = sf::nn;

// head, layer1..layer4 and fc, as the seed's ResNet names its parts.
class Network : public nn::Cell {
 public:
  Network() {
    head = register_cell("head", dense_relu(4, 16));
    layer1 = register_cell("layer1", dense_relu(16, 16));
    layer2 = register_cell("layer2", dense_relu(16, 16));
    layer3 = register_cell("layer3", dense_relu(16, 16));
    layer4 = register_cell("layer4", dense_relu(16, 16));
    fc = register_cell("fc", std::make_shared<nn::Dense>(16, 3));
  }
  sf::Value construct(sf::GraphBuilder& b, sf::Value x) override {
    for (const nn::CellPtr& cell : {head, layer1, layer2, layer3, layer4, fc}) x = (*cell)(b, x);
    return x;
  }
  nn::CellPtr head, layer1, layer2, layer3, layer4, fc;

 private:
  static nn::CellPtr dense_relu(int64_t in, int64_t out) {
    return std::make_shared<nn::SequentialCell>(
        std::vector<nn::CellPtr>{std::make_shared<nn::Dense>(in, out), std::make_shared<nn::ReLU>()});
  }
};

}  // namespace

int main(int argc, char** argv) try {
  sf::comm::init(argc, argv);
  const sf::dataset::Dataset data_set = snippets::synthetic_dataset(64, 16);
  sf::comm::run_ranks([&] {
    Network net;
    // [pipeline]
    sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel, .gradients_mean = true,
                                   .dataset_strategy = "full_batch", .pipeline_stages = 2});
    net.head->set_pipeline_stage(0); net.layer1->set_pipeline_stage(0); net.layer2->set_pipeline_stage(0);
    net.layer3->set_pipeline_stage(1); net.layer4->set_pipeline_stage(1); net.fc->set_pipeline_stage(1);
    sf::nn::PipelineCell net_pipeline(sf::nn::WithLossCell(net, sf::nn::CrossEntropyLoss()), 2);
    sf::Model model(net_pipeline, sf::nn::Momentum(net.infer_param_pipeline_stage(), 0.01f, 0.9f));
    // [pipeline]
    std::vector<sf::CallbackPtr> callbacks;
    if (sf::comm::get_rank() == 0) callbacks.push_back(std::make_shared<sf::LossMonitor>(1));
    model.train(2, data_set, callbacks);
  });
  sf::comm::release();
  return 0;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
