// The library guide's program (docs/library_guide.md), operator parallel: the same 3-layer MLP
// written with its ops as primitives so each can be sharded; the hidden layers split over the
// devices (the first MatMul by columns, the second by rows with an AllReduce inserted), trained
// on every rank of the job, evaluated with the gathered parameters, its blocks checkpointed per
// rank. Run with --devices N (N dividing 128: 1, 2, 4, 8, ...), or N ranks under sfrun / mpirun.
#include <iostream>

#include <shardflow/shardflow.h>

// [network]
// The 3-layer MLP with each op a primitive that shard() can split.
class Mlp3 : public sf::nn::Cell {
 public:
  sf::Parameter& w1 = register_parameter("w1", {28 * 28, 256}, "normal");
  sf::Parameter& w2 = register_parameter("w2", {256, 128}, "normal");
  sf::Parameter& w3 = register_parameter("w3", {128, 10}, "normal");
  sf::Primitive& flatten = register_primitive("flatten", "Flatten");
  sf::Primitive& matmul1 = register_primitive("matmul1", "MatMul");
  sf::Primitive& relu1 = register_primitive("relu1", "ReLU");
  sf::Primitive& matmul2 = register_primitive("matmul2", "MatMul");
  sf::Primitive& relu2 = register_primitive("relu2", "ReLU");
  sf::Primitive& matmul3 = register_primitive("matmul3", "MatMul");

  sf::Value construct(sf::GraphBuilder& b, sf::Value x) override {
    x = relu1(b, {matmul1(b, {flatten(b, {x}), param(b, w1)})});
    x = relu2(b, {matmul2(b, {x, param(b, w2)})});
    return matmul3(b, {x, param(b, w3)});
  }
};
// [network]

sf::dataset::Dataset fashion_mnist(const std::string& usage, int64_t rows) {
  using namespace sf::dataset;
  return Dataset::mnist("/usr/share/datasets/fashion-mnist", usage)
      .map({Rescale(1.0f / 255.0f, 0.0f), Normalize({0.2860f}, {0.3530f}), HWC2CHW()}, "image")
      .map({TypeCast(sf::DType::kI32)}, "label")
      .take(rows);
}

int main(int argc, char** argv) try {
  // [operator_parallel]
  sf::comm::init(argc, argv);
  const int n = sf::comm::job().size;
  if (128 % n != 0) throw sf::InvalidArgument("the hidden layers split over the devices: 128 must be divisible by " +
                                              std::to_string(n) + " devices");
  sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel});
  if (sf::comm::job().local_ranks > 1) sf::set_log_ranks(sf::LogRanks::kRank0, sf::new_job_dir("log_output"));
  sf::comm::run_ranks([&] {
    sf::set_seed(1);
    Mlp3 net;
    net.matmul1.shard({{1, 1}, {1, n}});  // w1 split by columns: each device computes 256/n features
    net.relu1.shard({{1, n}});
    net.matmul2.shard({{1, n}, {n, 1}});  // w2 split by rows: partial sums, AllReduced
    sf::Model model(net, sf::nn::CrossEntropyLoss(), sf::nn::Adam(net.trainable_params(), 1e-3f));
    // Every rank reads the whole batch (semi-auto parallel feeds each its block).
    sf::dataset::Dataset train_set = fashion_mnist("train", 3200).shuffle(7).batch(64);
    auto checkpoints = std::make_shared<sf::ModelCheckpoint>(
        "mlp", "guide_op_checkpoints/rank_" + std::to_string(sf::comm::get_rank()));  // this rank's blocks
    model.train(2, train_set, {std::make_shared<sf::LossMonitor>(10), checkpoints});
    // A collective: gathers the parameter blocks and evaluates the whole network on every rank.
    const double accuracy = model.eval_accuracy(fashion_mnist("test", 1000).batch(250, false));
    sf::log_line("test accuracy: " + std::to_string(accuracy));
  });
  sf::comm::release();
  // [operator_parallel]
  return 0;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
