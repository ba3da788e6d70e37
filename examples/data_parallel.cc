// Data parallel, as seed 004 (MindSpore's distributed_data_parallel.py): every device holds the
// whole network and trains on its own shard of Fashion-MNIST; the gradients are AllReduced and
// averaged before each update, so all devices keep the same parameters. Each rank writes its
// loss lines through the log sink: with 8 virtual devices to log_output/<job>/rank.<r>/stdout,
// rank 0's also to stdout (--log-ranks), and a process holding one rank to its stdout, which
// sfrun keeps in the same layout.
//
//   ./build/examples/data_parallel --devices 8                 # 8 virtual devices, one process
//   sfrun -n 8 ./build/examples/data_parallel                  # 8 processes
//   mpirun -np 8 ./build/examples/data_parallel                # 8 processes, mpi transport
//   ./build/examples/data_parallel --devices 8 --api model     # Model.train instead of the loop
//   ./build/examples/data_parallel --devices 2 --api model --checkpoint-dir run --save-every 30
//   ./build/examples/data_parallel --devices 2 --api model --resume run   # continues from run's latest step
//   ./build/examples/data_parallel --devices 2 --resume run/step_30       # the seed's loop resumes too
//
// Any number of devices, 1 included: each reads its shard of the training set (the rows
// i = rank mod devices), so N devices with --batch B train on the 1-device run's global batch of
// N x B rows. --batch is per device, as the seed's create_dataset(32). --steps S trains on the
// first S global batches of each epoch.
#include <fmt/format.h>

#include "examples/example_main.h"
#include <shardflow/core/cli_checks.h>
#include <shardflow/shardflow.h>
#include <shardflow/train/loop_checkpoint.h>

namespace {

namespace ds = sf::dataset;
namespace nn = sf::nn;
namespace ex = sf::examples;

struct Options {
  std::string api = "functional";  // the seed's training loop, or "model" (Model.train)
  int64_t batch = 32;
  float lr = 1e-2f;
  int64_t hidden = 512;  // the hidden layers' width (the seed's 512; wider: more state to move)
  std::string elastic_timeline;  // --elastic-timeline DIR: each rank's steps and membership changes
};

const std::vector<ds::Transform> image_transforms = {ds::Rescale(1.0f / 255.0f, 0.0f),
                                                     ds::Normalize({0.1307f}, {0.3081f}), ds::HWC2CHW()};

// The seed's create_dataset: this rank's shard, rescaled and normalized, batched.
ds::Dataset create_dataset(const ex::CommonOptions& c, int64_t batch_size) {
  const int rank_id = sf::comm::get_rank();
  const int rank_size = sf::comm::get_group_size();
  ds::Dataset dataset = ex::take_steps(ds::Dataset::mnist(c.data_dir, "train", rank_size, rank_id), c.steps, batch_size);
  dataset = dataset.map(image_transforms, "image");
  dataset = dataset.map({ds::TypeCast(sf::DType::kI32)}, "label");
  return dataset.batch(batch_size);
}

// The whole test set, for the accuracy every rank reaches with the same parameters.
ds::Dataset create_test_dataset(const ex::CommonOptions& c) {
  return ds::Dataset::mnist(c.data_dir, "test")
      .map(image_transforms, "image")
      .map({ds::TypeCast(sf::DType::kI32)}, "label")
      .batch(1000, false);
}

// The seed's Network: Flatten, then Dense-ReLU-Dense-ReLU-Dense with normal / zeros init; the
// hidden layers `hidden` wide (the seed's: 512).
class Network : public nn::Cell {
 public:
  explicit Network(int64_t hidden) {
    flatten_ = register_cell("flatten", std::make_shared<nn::Flatten>());
    dense_relu_sequential_ = register_cell(
        "dense_relu_sequential",
        std::make_shared<nn::SequentialCell>(std::initializer_list<nn::CellPtr>{
            std::make_shared<nn::Dense>(28 * 28, hidden, "normal", "zeros"), std::make_shared<nn::ReLU>(),
            std::make_shared<nn::Dense>(hidden, hidden, "normal", "zeros"), std::make_shared<nn::ReLU>(),
            std::make_shared<nn::Dense>(hidden, 10, "normal", "zeros")}));
  }
  sf::Value construct(sf::GraphBuilder& b, sf::Value x) override {
    x = (*flatten_)(b, x);
    return (*dense_relu_sequential_)(b, x);
  }

 private:
  nn::CellPtr flatten_, dense_relu_sequential_;
};

// One rank's training: the seed's loop, or Model.train. Returns the test accuracy.
double train(const Options& o, const ex::Example& example) {
  const ex::CommonOptions& c = example.common();
  auto loss_fn = std::make_shared<nn::CrossEntropyLoss>();

  sf::ElasticOptions elastic;
  elastic.timeline_dir = o.elastic_timeline;
  if (o.api == "model") {
    // Model.train reduces the gradients itself, in buckets, while backward runs. Under
    // `sfrun --elastic` a lost rank's peers go on without it: each new world builds this anew.
    // [elastic]
    const sf::TrainingSetup done = sf::train_elastic(c.epochs, [&](uint32_t generation) {
      auto net = std::make_shared<Network>(o.hidden);
      auto optimizer = std::make_shared<nn::SGD>(net->trainable_params(), o.lr);
      sf::TrainingSetup s;
      s.model = std::make_shared<sf::Model>(*net, loss_fn, optimizer);
      s.train_set = create_dataset(c, o.batch);
      s.callbacks = {std::make_shared<sf::LossMonitor>(c.print_every)};
      s.keep = net;
      // Only the first world resumes --resume: later ones take the agreed step's state.
      s.from = example.checkpointing(*s.model, s.train_set, s.callbacks, generation == 0 ? c.resume : "");
      return s;
    }, elastic);
    // [elastic]
    return done.model->eval_accuracy(create_test_dataset(c));
  }

  // The seed's loop. Under `sfrun --elastic` it is one world's training too: train_elastic
  // builds it anew in each world and passes the loop its callbacks, which LoopCheckpoint calls.
  struct Loop {
    explicit Loop(int64_t hidden) : net(hidden) {}
    Network net;
    std::shared_ptr<nn::SGD> optimizer;
  };
  const sf::TrainingSetup done = sf::train_elastic(c.epochs, [&](uint32_t generation) {
    auto loop = std::make_shared<Loop>(o.hidden);
    loop->optimizer = std::make_shared<nn::SGD>(loop->net.trainable_params(), o.lr);
    // The model holds the loop's network and optimizer for the checkpoints (and the accuracy
    // below); the loop reports where it stands after each step, as Model.train does.
    sf::TrainingSetup s;
    s.model = std::make_shared<sf::Model>(loop->net, loss_fn, loop->optimizer);
    s.train_set = create_dataset(c, o.batch);
    s.keep = loop;
    if (generation == 0 && !c.resume.empty()) s.from = sf::resume_from(*s.model, s.train_set, c.resume);
    s.run = [&c, loop, loss_fn, model = s.model, data_set = s.train_set](
                const std::vector<sf::CallbackPtr>& callbacks, sf::ResumePoint from) {
      Network& net = loop->net;
      auto forward_fn = [&](sf::GraphBuilder& b, const std::vector<sf::Value>& in) {
        sf::Value logits = net(b, in[0]);
        return (*loss_fn)(b, logits, in[1]);
      };
      auto grad_fn = sf::value_and_grad(forward_fn, net.trainable_params());
      nn::DistributedGradReducer grad_reducer(loop->optimizer->parameters());
      sf::LoopCheckpoint checkpoint(*model, data_set, {c.checkpoint_dir, c.save_every, c.keep}, callbacks);
      checkpoint.begin_at(from);
      for (int64_t epoch = from.epoch; epoch < c.epochs; ++epoch) {
        int64_t i = epoch == from.epoch ? from.step : 0;
        ds::BatchIterator it = data_set.iterator(epoch);
        it.skip(i);
        while (const std::vector<sf::Tensor>* batch = it.next()) {
          auto [loss, grads] = grad_fn({(*batch)[0], (*batch)[1]});
          const std::vector<sf::Tensor>& reduced = grad_reducer(grads);
          loop->optimizer->step(reduced);
          if (i % c.print_every == 0)
            sf::log_line(fmt::format("epoch: {} step: {}, loss is {}", epoch, i, sf::format_loss(loss)));
          ++i;
          checkpoint.step_end(epoch, i);
        }
      }
      checkpoint.end();
    };
    return s;
  }, elastic);
  // Test accuracy with the trained parameters (every rank holds the same ones).
  return done.model->eval_accuracy(create_test_dataset(c));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  ex::Example example("Data parallel training of seed 004's network on Fashion-MNIST",
                      ex::kDataDir | ex::kLogDir | ex::kEpochs | ex::kSteps | ex::kPrintEvery | ex::kCheckpoint);
  example.common().print_every = 50;
  CLI::App& app = example.cli();
  app.add_option("--api", o.api, "functional (the seed's loop) or model (Model.train)")
      ->check(CLI::IsMember({"functional", "model"}));
  app.add_option("--batch", o.batch, "batch size per device")->check(sf::cli::kPositive);
  app.add_option("--lr", o.lr)->check(sf::cli::kPositive);
  app.add_option("--hidden", o.hidden, "the hidden layers' width (the seed's 512)")
      ->check(CLI::Range(int64_t{1}, int64_t{16384}));
  app.add_option("--elastic-timeline", o.elastic_timeline,
                 "under sfrun --elastic: write DIR/rank.R.timeline.json (steps and membership "
                 "changes, for sfviz show)");
  const ex::CommonOptions& c = example.common();
  example.prepare = [&](const sf::comm::JobSpec&) {
    ds::Dataset::check_mnist(c.data_dir, "train");
    ds::Dataset::check_mnist(c.data_dir, "test");
    if (!o.elastic_timeline.empty()) sf::prepare_timeline_dir(o.elastic_timeline);  // before the job starts
    return ex::Next::kJoin;
  };
  example.run = [&] {
    sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kDataParallel, .gradients_mean = true});
    sf::set_seed(1);
    sf::comm::run_ranks([&] {
      const double accuracy = train(o, example);
      sf::log_line(fmt::format("test accuracy: {:.4f}", accuracy));
      if (example.several() && sf::comm::get_rank() == 0)
        sf::write_line(std::cout, fmt::format("{} devices, global batch {}: test accuracy: {:.4f} (logs in {})",
                                              sf::comm::get_group_size(), o.batch * sf::comm::get_group_size(),
                                              accuracy, example.logs_where()));
    });
  };
  return example.main(argc, argv);
}
