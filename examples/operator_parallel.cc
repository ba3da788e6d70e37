// Operator-level parallel with Layout, as seed 001 (MindSpore's
// advanced_distributed_operator_parallel.py): the MLP's ops are sharded over 8 devices —
// matmul1 by the (2,2,2) layout of the seed's worked example, relu1 by the tuple (4,1),
// matmul2 split 8 ways on its reduce dim by layout2, relu2 (8,1), the rest by default — and
// trained on Fashion-MNIST with the seed's loop. Every rank reads the whole dataset and prints
// the global loss; afterwards the parameters' blocks are gathered for the test accuracy.
//
//   ./build/examples/operator_parallel --devices 8                    # 8 virtual devices, one process
//   sfrun -n 8 ./build/examples/operator_parallel                     # 8 processes
//   mpirun -np 8 ./build/examples/operator_parallel
//   ./build/examples/operator_parallel --devices 8 --api model --save-graphs saved_graph
//   ./build/examples/operator_parallel --devices 8 --strategy-file strategies.json
//   ./build/examples/operator_parallel --dry-run 4096                 # the plan for 4096 ranks, none started
//   ./build/examples/operator_parallel --devices 8 --checkpoint-dir run --save-every 100
//   ./build/examples/operator_parallel --devices 4 --resume run   # resharded to 4 devices (either --api)
//
// Any number of devices N, 1 included: the seed's strategies need 8 devices, so on N they are
// derived over d, the largest power of two dividing N up to the seed's 8 — the device matrix
// (dp, sp, mp) of d with its factors of 2 given to dp, sp, mp in turn, relu1 (d/2, 1), layout2
// (d), relu2 (d, 1) — and repeated N/d times; on 8 (and on any multiple of 8) they are the
// seed's. On an odd N, d is 1: nothing is sharded and every op takes the default.
//
// --api model trains with Model.train (MindSpore's model.train) instead of the seed's loop;
// either can write the parallel IR of every rank (--save-graphs DIR, docs/ir_dump.md).
// --strategy-file loads the ops' strategies from a JSON file (docs/strategy_file.md) instead
// of the shard() calls below; --save-strategy-file writes those used, defaults included;
// --explain prints each op's strategy and whether it was given or is the default.
// --dry-run N prints, for N ranks, each rank's parameter and activation bytes and the bytes
// each collective moves per step, without starting a rank (docs/auto_parallel.md).
//
// --tensor-parallel T replaces the seed's strategies with data parallel x tensor parallel, as
// Megatron-LM splits an MLP: on N devices t = gcd(T, N) ranks split each hidden layer (matmul1's
// weight by columns, matmul2's by rows, whose partial sums are AllReduced over the t ranks) and
// the batch goes in N / t blocks, so every weight block has N / t data-parallel replicas. With
// --api model it trains through train_elastic: under `sfrun --elastic MIN:MAX` a lost rank's
// blocks are taken from a replica and the survivors go on with the split their count allows
// (docs/elastic.md):
//
//   sfrun -n 4 --elastic 3:4 -- ./build/examples/operator_parallel --tensor-parallel 2 --api model --batch 48
#include <numeric>

#include <fmt/format.h>

#include "examples/example_main.h"
#include "examples/seed001_net.h"
#include "examples/strategy_options.h"
#include <shardflow/core/cli_checks.h>
#include <shardflow/ops/blas.h>
#include <shardflow/shardflow.h>
#include <shardflow/train/network_plan.h>

namespace {

namespace ds = sf::dataset;
namespace nn = sf::nn;
namespace ex = sf::examples;
using seed001::Network;

struct Options {
  std::string api = "functional";  // the seed's loop, or "model" (Model.train)
  std::string save_graphs;
  ex::StrategyOptions strategies;
  int64_t dry_run = 0;
  int64_t batch = 32;           // the global batch, every rank reads it whole
  int64_t tensor_parallel = 0;  // --tensor-parallel T: DP x TP instead of the seed's strategies
  std::string elastic_timeline;  // --elastic-timeline DIR: each rank's steps and membership changes
};

const std::vector<ds::Transform> image_transforms = {ds::Rescale(1.0f / 255.0f, 0.0f),
                                                     ds::Normalize({0.1307f}, {0.3081f}), ds::HWC2CHW()};

// The seed's create_dataset: as on a single card (not sharded), rescaled, normalized, batched.
ds::Dataset create_dataset(const ex::CommonOptions& c, int64_t batch_size, const std::string& usage = "train") {
  ds::Dataset dataset = ds::Dataset::mnist(c.data_dir, usage);
  if (usage == "train") dataset = ex::take_steps(dataset, c.steps, batch_size);
  dataset = dataset.map(image_transforms, "image");
  dataset = dataset.map({ds::TypeCast(sf::DType::kI32)}, "label");
  return dataset.batch(batch_size, usage == "train");  // the whole test set, a short last batch too
}

// The largest power of two that divides `devices`, up to the seed's 8: the devices the seed's
// strategies are derived over (see the header comment).
int strategy_devices(int64_t devices) {
  int d = 1;
  while (d < 8 && devices % (2 * d) == 0) d *= 2;
  return d;
}

// Where the strategies come from, for the first line; nothing for the seed's own.
std::string strategies_used(const Options& o, int devices) {
  if (!o.strategies.strategy_file.empty()) return ", strategies from " + o.strategies.strategy_file;
  if (o.tensor_parallel > 0) {
    const int64_t t = std::gcd(o.tensor_parallel, static_cast<int64_t>(devices));
    return fmt::format(", data parallel {} x tensor parallel {}", devices / t, t);
  }
  const int d = strategy_devices(devices);
  if (d == 8) return "";
  if (d == 1) return ", no op sharded (the seed's strategies need a device count with a factor of 2)";
  return fmt::format(", the seed's strategies derived for {} devices", d);
}

// --tensor-parallel T on `devices` devices: t = gcd(T, devices) ranks split each hidden layer,
// the batch goes in devices / t blocks (see the header comment).
void shard_dp_tp(Network& net, int64_t tensor_parallel, int64_t devices) {
  const int64_t t = std::gcd(tensor_parallel, devices), dp = devices / t;
  net.matmul1.shard({{dp, 1}, {1, t}});
  net.relu1.shard({{dp, t}});
  net.matmul2.shard({{dp, t}, {t, 1}});
  net.relu2.shard({{dp, 1}});
  net.matmul3.shard({{dp, 1}, {1, 1}});
}

// The seed's strategies for `devices` devices (derived as the header comment says), those of a
// strategy file, or --tensor-parallel's.
void shard(Network& net, const Options& o, const sf::StrategyTable& from_file, int64_t devices) {
  if (!from_file.empty()) {
    for (const auto& [op, strategy] : from_file) net.shard(op, strategy);
    return;
  }
  if (o.tensor_parallel > 0) return shard_dp_tp(net, o.tensor_parallel, devices);
  const int d = strategy_devices(devices);
  if (d == 1) return;
  int64_t matrix[3] = {1, 1, 1};  // dp, sp, mp: 8 gives the seed's (2, 2, 2)
  for (int k = 0, rest = d; rest > 1; ++k, rest /= 2) matrix[k % 3] *= 2;
  sf::Layout layout({matrix[0], matrix[1], matrix[2]}, {"dp", "sp", "mp"});
  net.matmul1.shard({layout("mp", {"sp", "dp"}), layout({"sp", "dp"}, "None")});
  net.relu1.shard({{d / 2, 1}});
  sf::Layout layout2({d}, {"tp"});
  net.matmul2.shard({layout2("None", "tp"), layout2("tp", "None")});
  net.relu2.shard({{d, 1}});
}

// The network and loss on global shapes (a batch of `batch` rows), as every rank builds them
// before sharding: to check a strategy file and to save the strategies used, before any rank
// starts.
int global_graph(Network& net, sf::Graph& g, int64_t batch) {
  net.trainable_params();
  sf::GraphBuilder b(g);
  sf::Value logits = net(b, b.input("input0", {batch, 1, 28, 28}));
  return nn::CrossEntropyLoss()(b, logits, b.input("input1", {batch}, sf::DType::kI32)).id;
}

// --dry-run N: the plan of a batch of --batch rows (the seed's 32) on N ranks, none started.
void dry_run(const Options& o, const sf::StrategyTable& from_file) {
  Network net;
  shard(net, o, from_file, o.dry_run);
  nn::CrossEntropyLoss loss_fn;
  const sf::NetworkPlan plan = sf::plan_network(
      net, [&](sf::GraphBuilder& b, const std::vector<sf::Value>& in) { return loss_fn(b, net(b, in[0]), in[1]); },
      {{o.batch, 1, 28, 28}, {o.batch}}, {sf::DType::kF32, sf::DType::kI32}, o.dry_run);
  std::cout << plan.str(false);
}

// The seed's training loop: value_and_grad of forward_fn, then optimizer(grads). The model
// holds the network and optimizer for the checkpoints; the loop reports where it stands.
void train_functional(const Options& o, const ex::CommonOptions& c, Network& net, std::shared_ptr<nn::SGD> optimizer,
                      nn::CrossEntropyLoss& loss_fn, ds::Dataset& data_set) {
  auto forward_fn = [&](sf::GraphBuilder& b, const std::vector<sf::Value>& in) {
    sf::Value logits = net(b, in[0]);
    sf::Value loss = loss_fn(b, logits, in[1]);
    return loss;
  };
  sf::GradFunction grad_fn = sf::value_and_grad(forward_fn, net, net.trainable_params());
  auto train_step = [&](const sf::Tensor& inputs, const sf::Tensor& targets) {
    auto [loss_value, grads] = grad_fn({inputs, targets});
    optimizer->step(grads);
    return loss_value;
  };
  sf::Model model(net, std::make_shared<nn::CrossEntropyLoss>(), optimizer);
  sf::LoopCheckpoint checkpoint(model, data_set, {c.checkpoint_dir, c.save_every, c.keep});
  const sf::ResumePoint from = checkpoint.begin(c.resume);
  for (int64_t epoch = from.epoch; epoch < c.epochs; ++epoch) {
    int64_t i = epoch == from.epoch ? from.step : 0;
    ds::BatchIterator it = data_set.iterator(epoch);
    it.skip(i);
    while (const std::vector<sf::Tensor>* batch = it.next()) {
      const float loss_output = train_step((*batch)[0], (*batch)[1]);
      if (epoch == 0 && i == 0 && !o.save_graphs.empty()) sf::save_graphs(*grad_fn.semi_auto_program(), o.save_graphs);
      if (i % c.print_every == 0)
        sf::log_line(fmt::format("epoch: {}, step: {}, loss is {}", epoch, i, loss_output));
      i += 1;
      checkpoint.step_end(epoch, i);
    }
  }
  checkpoint.end();
}

// Model.train, which can also write the parallel IR after the first step. Under `sfrun --elastic`
// each world after a membership change builds this anew, sharded for its rank count. Returns
// the network that finished.
std::shared_ptr<Network> train_model(const Options& o, const ex::Example& example, const sf::StrategyTable& from_file,
                                     const ds::Dataset& data_set) {
  const ex::CommonOptions& c = example.common();
  std::shared_ptr<sf::SaveGraphs> save;
  sf::ElasticOptions elastic;
  elastic.timeline_dir = o.elastic_timeline;
  const sf::TrainingSetup done = sf::train_elastic(c.epochs, [&](uint32_t generation) {
    auto net = std::make_shared<Network>();
    shard(*net, o, from_file, sf::comm::get_group_size());
    auto optimizer = std::make_shared<nn::SGD>(net->trainable_params(), 1e-2f);
    sf::TrainingSetup s;
    s.model = std::make_shared<sf::Model>(*net, std::make_shared<nn::CrossEntropyLoss>(), optimizer);
    s.train_set = data_set;
    s.callbacks = {std::make_shared<sf::LossMonitor>(c.print_every), std::make_shared<sf::TimeMonitor>()};
    save = std::make_shared<sf::SaveGraphs>(*s.model, o.save_graphs);
    if (!o.save_graphs.empty()) s.callbacks.push_back(save);
    // Only the first world resumes --resume: later ones take the agreed step's state.
    s.from = example.checkpointing(*s.model, s.train_set, s.callbacks, generation == 0 ? c.resume : "");
    s.keep = net;
    return s;
  }, elastic);
  if (!o.save_graphs.empty() && sf::comm::get_rank() == 0)
    sf::write_line(std::cout, fmt::format("IR of every rank written to {}/rank_*/ ({} files each)", o.save_graphs,
                                          save->files().size()));
  return std::static_pointer_cast<Network>(done.keep);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  ex::Example example("Operator-level parallel training of seed 001's network on Fashion-MNIST",
                      ex::kDataDir | ex::kLogDir | ex::kEpochs | ex::kSteps | ex::kPrintEvery | ex::kCheckpoint);
  example.common().epochs = 10;
  CLI::App& app = example.cli();
  app.add_option("--api", o.api, "functional (the seed's loop) or model (Model.train)")
      ->check(CLI::IsMember({"functional", "model"}));
  app.add_option("--save-graphs", o.save_graphs, "write each rank's parallel IR under DIR/rank_<r>/");
  CLI::Option* strategy_file = ex::add_strategy_options(app, o.strategies);
  app.add_option("--batch", o.batch, "the global batch, which every rank reads whole (the seed's 32)")
      ->check(sf::cli::kPositive);
  app.add_option("--tensor-parallel", o.tensor_parallel,
                 "data parallel x tensor parallel instead of the seed's strategies: gcd(T, devices) ranks split each "
                 "hidden layer (elastic under sfrun --elastic with --api model)")
      ->check(sf::cli::kPositive)
      ->excludes(strategy_file);
  app.add_option("--elastic-timeline", o.elastic_timeline,
                 "under sfrun --elastic (--api model): write DIR/rank.R.timeline.json (steps and membership changes, "
                 "for sfviz show)");
  app.add_option("--dry-run", o.dry_run, "plan the job for N ranks without starting any, and print per rank "
                                         "its memory and the bytes each collective moves per step")
      ->check(sf::cli::kPositive);
  const ex::CommonOptions& c = example.common();

  sf::StrategyTable from_file;
  ds::Dataset data_set;  // shared by the virtual devices of this process
  example.prepare = [&](const sf::comm::JobSpec& job) {
    sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel});
    sf::set_seed(1);
    if (o.dry_run > 0) {
      const sf::StrategyTable table =
          o.strategies.strategy_file.empty() ? sf::StrategyTable{} : sf::load_strategy_file(o.strategies.strategy_file);
      dry_run(o, table);
      return ex::Next::kDone;
    }
    // The global graph of an unsharded network, for the strategy file's check.
    from_file = ex::load_strategies(
        o.strategies,
        [&](sf::Graph& g) {
          Network net;
          return global_graph(net, g, o.batch);
        },
        job.size);
    // Each world an elastic job (Model.train) may come to is split for its rank count, with the
    // same checks.
    if (o.api == "model") ex::check_elastic_worlds([&](int ranks) {
      Network net;
      shard(net, o, from_file, ranks);
      sf::Graph g;
      const int loss = global_graph(net, g, o.batch);
      sf::shard_graph(g, {loss}, net.strategies(), ranks);
    });
    data_set = create_dataset(c, o.batch);
    ds::Dataset::check_mnist(c.data_dir, "test");  // read after training, for the accuracy
    if (!o.elastic_timeline.empty()) sf::prepare_timeline_dir(o.elastic_timeline);  // before the job starts
    if (job.rank == 0 && (o.strategies.explain || !o.strategies.save_strategy_file.empty())) {
      Network net;
      shard(net, o, from_file, job.size);
      sf::Graph g;
      const int loss = global_graph(net, g, o.batch);
      const sf::GraphSharding sharding = sf::shard_graph(g, {loss}, net.strategies(), job.size);
      const sf::StrategyTable used = sf::strategies_of(g, sharding);
      if (o.strategies.explain)
        std::cout << ex::explain_semi_auto(used, net.strategies(), from_file.empty() ? "shard()" : "the strategy file");
      if (!o.strategies.save_strategy_file.empty()) sf::save_strategy_file(o.strategies.save_strategy_file, g, sharding);
    }
    return ex::Next::kJoin;
  };

  std::vector<sf::Tensor> trained;  // the whole parameters, for the test accuracy
  example.run = [&] {
    const int devices = sf::comm::job().size;
    if (sf::comm::job().rank == 0)
      std::cout << fmt::format("shardflow: seed 001's MLP 784-512-512-10, operator-parallel on {} devices ({}), "
                               "sgd lr 0.01, batch {}, {} epoch(s), {} API{}, BLAS: {}\n",
                               devices, example.several() ? "virtual, one process" : "one per process", o.batch,
                               c.epochs,
                               o.api,
                               strategies_used(o, devices),
                               sf::blas_config());

    sf::comm::run_ranks([&] {
      // Loss lines through the log sink: every rank's in its file, rank 0's also here (--log-ranks).
      std::shared_ptr<Network> net;
      if (o.api == "model") {
        net = train_model(o, example, from_file, data_set);
      } else {
        net = std::make_shared<Network>();
        shard(*net, o, from_file, devices);
        auto optimizer = std::make_shared<nn::SGD>(net->trainable_params(), 1e-2f);
        nn::CrossEntropyLoss loss_fn;
        train_functional(o, c, *net, optimizer, loss_fn, data_set);
      }
      std::vector<sf::Tensor> whole = sf::gather_parameters(net->trainable_params());
      if (!example.several() || sf::comm::get_rank() == 0) trained = std::move(whole);  // one copy per process
    });

    // Test accuracy of the trained network on one device, from the gathered parameters.
    sf::set_auto_parallel_context({});
    Network eval_net;
    sf::ParameterList params = eval_net.trainable_params();
    for (size_t i = 0; i < params.size(); ++i) params[i].value() = trained[i];
    sf::Model model(eval_net, nn::CrossEntropyLoss(), nn::SGD(params, 1e-2f));
    const double accuracy = model.eval_accuracy(create_dataset(c, 1000, "test"));
    std::cout << fmt::format("{} devices: test accuracy: {:.4f}{}\n", devices, accuracy,
                             example.several() ? fmt::format(" (loss lines in {})", example.logs_where()) : "");
  };
  return example.main(argc, argv);
}
