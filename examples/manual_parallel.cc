// Manual parallel, as seed 000 (MindSpore's manual_parallel/train.py): every device loads the
// whole batch, its network keeps only this device's slice of the rows, and the loss is
// AllReduced inside the graph (loss = AllReduce(loss) / device_num), so every device prints
// the loss of the whole batch. Each rank writes its loss lines to
// log_output/<job>/rank.<r>/stdout (8 virtual devices) or to its stdout (sfrun keeps the same
// layout).
//
//   ./build/examples/manual_parallel --devices 8               # 8 virtual devices, one process
//   sfrun -n 8 ./build/examples/manual_parallel                # 8 processes
//   mpirun -np 8 ./build/examples/manual_parallel
//   ./build/examples/manual_parallel --devices 8 --checkpoint-dir run --save-every 100
//   ./build/examples/manual_parallel --devices 4 --resume run     # on 4 devices: the same batch_size
//
// Any number of devices that divides --batch-size (1 included): each takes batch_size / devices
// rows of every batch. --steps S trains on the first S batches of each epoch.
//
// One departure from the seed: it sets hybrid-parallel mode, where MindSpore's training step
// (TrainOneStepCell) also averages the parameters' gradients over the devices. The seed sets no
// mode, so each device would step on the gradient of its own slice only and the devices'
// parameters would drift apart; averaged, all devices train the 1-device model.
#include <fmt/format.h>

#include "examples/example_main.h"
#include <shardflow/core/cli_checks.h>
#include <shardflow/shardflow.h>

namespace {

namespace ds = sf::dataset;
namespace nn = sf::nn;
namespace ex = sf::examples;

// The seed's Network: x = x[cur_rank*shard_size : cur_rank*shard_size + shard_size], then
// Flatten and three Dense layers with ReLU between them.
class Network : public nn::Cell {
 public:
  Network(int cur_rank, int64_t shard_size) : cur_rank_(cur_rank), shard_size_(shard_size) {
    flatten_ = register_cell("flatten", std::make_shared<nn::Flatten>());
    layer1_ = register_cell("layer1", std::make_shared<nn::Dense>(28 * 28, 512));
    relu1_ = register_cell("relu1", std::make_shared<nn::ReLU>());
    layer2_ = register_cell("layer2", std::make_shared<nn::Dense>(512, 512));
    relu2_ = register_cell("relu2", std::make_shared<nn::ReLU>());
    layer3_ = register_cell("layer3", std::make_shared<nn::Dense>(512, 10));
  }
  sf::Value construct(sf::GraphBuilder& b, sf::Value x) override {
    x = b.strided_slice(x, {cur_rank_ * shard_size_}, {cur_rank_ * shard_size_ + shard_size_});
    x = (*flatten_)(b, x);
    x = (*layer1_)(b, x);
    x = (*relu1_)(b, x);
    x = (*layer2_)(b, x);
    x = (*relu2_)(b, x);
    sf::Value logits = (*layer3_)(b, x);
    return logits;
  }

 private:
  int cur_rank_;
  int64_t shard_size_;
  nn::CellPtr flatten_, layer1_, relu1_, layer2_, relu2_, layer3_;
};

// The seed's ReduceLoss: this device's labels, cross entropy, AllReduce / device_num.
class ReduceLoss : public nn::LossFn {
 public:
  ReduceLoss(int cur_rank, int64_t shard_size, int device_num)
      : cur_rank_(cur_rank), shard_size_(shard_size), device_num_(device_num) {}
  sf::Value operator()(sf::GraphBuilder& b, sf::Value data, sf::Value label) const override {
    label = b.strided_slice(label, {cur_rank_ * shard_size_}, {cur_rank_ * shard_size_ + shard_size_});
    sf::Value loss_value = loss_(b, data, label);
    loss_value = sf::CollectiveBuilder(b, {"world", device_num_}).all_reduce(loss_value);  // ops.AllReduce()
    return b.op("RealDiv", {loss_value, b.fill({}, static_cast<float>(device_num_))});
  }

 private:
  int cur_rank_;
  int64_t shard_size_;
  int device_num_;
  nn::CrossEntropyLoss loss_;
};

const std::vector<ds::Transform> image_transforms = {ds::Rescale(1.0f / 255.0f, 0.0f),
                                                     ds::Normalize({0.1307f}, {0.3081f}), ds::HWC2CHW()};

// The seed's create_dataset: the whole training set on every device (not sharded).
ds::Dataset create_dataset(const ex::CommonOptions& c, int64_t batch_size) {
  ds::Dataset dataset = ex::take_steps(ds::Dataset::mnist(c.data_dir, "train"), c.steps, batch_size);
  dataset = dataset.map(image_transforms, "image");
  dataset = dataset.map({ds::TypeCast(sf::DType::kI32)}, "label");
  return dataset.batch(batch_size);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch_size = 32;
  ex::Example example("Manual (hand-written) data parallel training of seed 000's network on Fashion-MNIST",
                      ex::kDataDir | ex::kLogDir | ex::kEpochs | ex::kSteps | ex::kPrintEvery | ex::kCheckpoint);
  example.common().print_every = 20;
  example.cli()
      .add_option("--batch-size", batch_size, "the whole batch, sliced over the devices")
      ->check(sf::cli::kPositive);
  const ex::CommonOptions& c = example.common();
  int device_num = 1;
  ds::Dataset data_set;  // shared by the virtual devices of this process
  example.prepare = [&](const sf::comm::JobSpec& job) {
    device_num = job.size;
    SF_ENFORCE(batch_size % device_num == 0, InvalidArgument,
               "batch_size {} is not divisible by device_num {}: each device takes batch_size // device_num rows, "
               "and the last {} rows of every batch would never be trained on",
               batch_size, device_num, batch_size % device_num);
    data_set = create_dataset(c, batch_size);
    return ex::Next::kJoin;
  };
  example.run = [&] {
    const int64_t shard_size = batch_size / device_num;
    sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kHybridParallel, .gradients_mean = true});
    sf::set_seed(1);
    sf::comm::run_ranks([&] {
      const int cur_rank = sf::comm::get_rank();
      Network net(cur_rank, shard_size);
      auto loss_fn = std::make_shared<ReduceLoss>(cur_rank, shard_size, device_num);
      auto optimizer = std::make_shared<nn::SGD>(net.trainable_params(), 1e-2f);
      std::vector<sf::CallbackPtr> callbacks{std::make_shared<sf::LossMonitor>(c.print_every)};
      sf::Model model(net, loss_fn, optimizer);
      const sf::ResumePoint from = example.checkpointing(model, data_set, callbacks);
      model.train(c.epochs, data_set, callbacks, from);
      if (cur_rank == 0)
        sf::write_line(std::cout, fmt::format("{} devices, batch_size {} ({} rows each): last loss lines in {}",
                                              device_num, batch_size, shard_size, example.logs_where()));
    });
  };
  return example.main(argc, argv);
}
