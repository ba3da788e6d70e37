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
//
// --api model trains with Model.train (MindSpore's model.train) instead of the seed's loop;
// either can write the parallel IR of every rank (--save-graphs DIR, docs/ir_dump.md).
// --strategy-file loads the ops' strategies from a JSON file (docs/strategy_file.md) instead
// of the shard() calls below; --save-strategy-file writes those used, defaults included.
// --dry-run N prints, for N ranks, each rank's parameter and activation bytes and the bytes
// each collective moves per step, without starting a rank (docs/auto_parallel.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <shardflow/core/cli_checks.h>
#include <shardflow/ops/blas.h>
#include <shardflow/shardflow.h>
#include <shardflow/train/network_plan.h>

namespace {

namespace ds = sf::dataset;
namespace nn = sf::nn;

struct Options {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string api = "functional";  // the seed's loop, or "model" (Model.train)
  std::string log_dir = "log_output";
  std::string save_graphs, strategy_file, save_strategy_file;
  int64_t epochs = 10, steps = 0, print_every = 10, dry_run = 0;
};

const std::vector<ds::Transform> image_transforms = {ds::Rescale(1.0f / 255.0f, 0.0f),
                                                     ds::Normalize({0.1307f}, {0.3081f}), ds::HWC2CHW()};

// The seed's create_dataset: as on a single card (not sharded), rescaled, normalized, batched.
ds::Dataset create_dataset(const Options& o, int64_t batch_size, const std::string& usage = "train") {
  ds::Dataset dataset = ds::Dataset::mnist(o.data_dir, usage);
  dataset = dataset.map(image_transforms, "image");
  dataset = dataset.map({ds::TypeCast(sf::DType::kI32)}, "label");
  return dataset.batch(batch_size);
}

// The seed's Network: Flatten, then three MatMuls without bias, ReLU between them.
class Network : public nn::Cell {
 public:
  sf::Parameter& fc1_weight = register_parameter("fc1_weight", {28 * 28, 512}, "normal");
  sf::Parameter& fc2_weight = register_parameter("fc2_weight", {512, 512}, "normal");
  sf::Parameter& fc3_weight = register_parameter("fc3_weight", {512, 10}, "normal");
  sf::Primitive& flatten = register_primitive("flatten", "Flatten");
  sf::Primitive& matmul1 = register_primitive("matmul1", "MatMul");
  sf::Primitive& relu1 = register_primitive("relu1", "ReLU");
  sf::Primitive& matmul2 = register_primitive("matmul2", "MatMul");
  sf::Primitive& relu2 = register_primitive("relu2", "ReLU");
  sf::Primitive& matmul3 = register_primitive("matmul3", "MatMul");

  sf::Value construct(sf::GraphBuilder& b, sf::Value x) override {
    x = flatten(b, {x});
    x = matmul1(b, {x, param(b, fc1_weight)});
    x = relu1(b, {x});
    x = matmul2(b, {x, param(b, fc2_weight)});
    x = relu2(b, {x});
    sf::Value logits = matmul3(b, {x, param(b, fc3_weight)});
    return logits;
  }
};

// The seed's strategies, or those of a strategy file.
void shard(Network& net, const sf::StrategyTable& from_file) {
  if (!from_file.empty()) {
    for (const auto& [op, strategy] : from_file) net.shard(op, strategy);
    return;
  }
  sf::Layout layout({2, 2, 2}, {"dp", "sp", "mp"});
  net.matmul1.shard({layout("mp", {"sp", "dp"}), layout({"sp", "dp"}, "None")});
  net.relu1.shard({{4, 1}});
  sf::Layout layout2({8}, {"tp"});
  net.matmul2.shard({layout2("None", "tp"), layout2("tp", "None")});
  net.relu2.shard({{8, 1}});
}

// The network and loss on global shapes (a batch of 32), as every rank builds them before
// sharding: to check a strategy file and to save the strategies used, before any rank starts.
int global_graph(Network& net, sf::Graph& g) {
  net.trainable_params();
  sf::GraphBuilder b(g);
  sf::Value logits = net(b, b.input("input0", {32, 1, 28, 28}));
  return nn::CrossEntropyLoss()(b, logits, b.input("input1", {32}, sf::DType::kI32)).id;
}

// --strategy-file: its strategies, checked against the global graph on `device_num` ranks.
sf::StrategyTable load_strategies(const std::string& path, int device_num) {
  sf::StrategyTable table = sf::load_strategy_file(path);
  Network net;
  sf::Graph g;
  const int loss = global_graph(net, g);
  sf::check_strategy_file(path, table, g, {loss}, device_num);
  return table;
}

// --save-strategy-file: every op's strategy, defaults included.
void save_strategies(const std::string& path, const sf::StrategyTable& from_file) {
  Network net;
  shard(net, from_file);
  sf::Graph g;
  const int loss = global_graph(net, g);
  const sf::GraphSharding sharding = sf::shard_graph(g, {loss}, net.strategies(), sf::comm::job().size);
  sf::save_strategy_file(path, sf::strategies_of(g, sharding));
}

// --dry-run N: the plan of the seed's batch of 32 on N ranks, none started.
void dry_run(const Options& o, const sf::StrategyTable& from_file) {
  Network net;
  shard(net, from_file);
  nn::CrossEntropyLoss loss_fn;
  const sf::NetworkPlan plan = sf::plan_network(
      net, [&](sf::GraphBuilder& b, const std::vector<sf::Value>& in) { return loss_fn(b, net(b, in[0]), in[1]); },
      {{32, 1, 28, 28}, {32}}, {sf::DType::kF32, sf::DType::kI32}, o.dry_run);
  std::cout << plan.str(false);
}

// The seed's training loop: value_and_grad of forward_fn, then optimizer(grads).
void train_functional(const Options& o, Network& net, nn::SGD& optimizer, nn::CrossEntropyLoss& loss_fn,
                      ds::Dataset& data_set, const std::vector<std::ostream*>& outs) {
  auto forward_fn = [&](sf::GraphBuilder& b, const std::vector<sf::Value>& in) {
    sf::Value logits = net(b, in[0]);
    sf::Value loss = loss_fn(b, logits, in[1]);
    return loss;
  };
  sf::GradFunction grad_fn = sf::value_and_grad(forward_fn, net, net.trainable_params());
  auto train_step = [&](const sf::Tensor& inputs, const sf::Tensor& targets) {
    auto [loss_value, grads] = grad_fn({inputs, targets});
    optimizer.step(grads);
    return loss_value;
  };
  for (int64_t epoch = 0; epoch < o.epochs; ++epoch) {
    int64_t i = 0;
    ds::BatchIterator it = data_set.iterator(epoch);
    while (const std::vector<sf::Tensor>* batch = it.next()) {
      if (o.steps > 0 && i == o.steps) break;
      const float loss_output = train_step((*batch)[0], (*batch)[1]);
      if (epoch == 0 && i == 0 && !o.save_graphs.empty()) sf::save_graphs(*grad_fn.semi_auto_program(), o.save_graphs);
      if (i % o.print_every == 0)
        for (std::ostream* out : outs)
          *out << fmt::format("epoch: {}, step: {}, loss is {}", epoch, i, loss_output) << std::endl;
      i += 1;
    }
  }
}

// Model.train, which can also write the parallel IR after the first step.
void train_model(const Options& o, Network& net, std::shared_ptr<nn::SGD> optimizer, ds::Dataset& data_set,
                 const std::vector<std::ostream*>& outs) {
  sf::Model model(net, std::make_shared<nn::CrossEntropyLoss>(), optimizer);
  std::vector<sf::CallbackPtr> callbacks;
  for (std::ostream* out : outs) {
    callbacks.push_back(std::make_shared<sf::LossMonitor>(o.print_every, *out));
    callbacks.push_back(std::make_shared<sf::TimeMonitor>(*out));
  }
  auto save = std::make_shared<sf::SaveGraphs>(model, o.save_graphs);
  if (!o.save_graphs.empty()) callbacks.push_back(save);
  model.train(o.epochs, data_set, callbacks);
  if (!o.save_graphs.empty() && sf::comm::get_rank() == 0)
    std::cout << fmt::format("IR of every rank written to {}/rank_*/ ({} files each)\n", o.save_graphs,
                             save->files().size());
}

}  // namespace

int main(int argc, char** argv) {
  try {
    // The job (--devices N, or the ranks sfrun / mpirun / Slurm started) is known from argv and
    // the environment, but joined only once every input is checked: a rank whose peers never
    // come must still stop at once on a bad strategy file or dataset.
    const sf::comm::JobSpec spec = sf::comm::resolve_job(sf::comm::consume_comm_args(argc, argv), sf::comm::process_env());
    Options o;
    CLI::App app{"Operator-level parallel training of seed 001's network on Fashion-MNIST"};
    app.add_option("--data-dir", o.data_dir, "directory with the Fashion-MNIST IDX files");
    app.add_option("--api", o.api, "functional (the seed's loop) or model (Model.train)")
        ->check(CLI::IsMember({"functional", "model"}));
    app.add_option("--epochs", o.epochs)->check(sf::cli::kPositive);
    app.add_option("--steps", o.steps, "stop each epoch after this many steps (0: all; functional loop)")
        ->check(sf::cli::kNonNegative);
    app.add_option("--print-every", o.print_every)->check(sf::cli::kPositive);
    app.add_option("--log-dir", o.log_dir, "per-rank logs when this process holds several devices");
    app.add_option("--save-graphs", o.save_graphs, "write each rank's parallel IR under DIR/rank_<r>/");
    app.add_option("--strategy-file", o.strategy_file, "load the ops' strategies from this JSON file");
    app.add_option("--save-strategy-file", o.save_strategy_file, "write the strategies used to this JSON file");
    app.add_option("--dry-run", o.dry_run, "plan the job for N ranks without starting any, and print per rank "
                                           "its memory and the bytes each collective moves per step")
        ->check(sf::cli::kPositive);
    CLI11_PARSE(app, argc, argv);
    SF_ENFORCE(o.api == "functional" || o.steps == 0, InvalidArgument, "--steps needs --api functional");

    sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel});
    sf::set_seed(1);
    if (o.dry_run > 0) {
      dry_run(o, o.strategy_file.empty() ? sf::StrategyTable{} : sf::load_strategy_file(o.strategy_file));
      return 0;
    }
    const sf::StrategyTable from_file =
        o.strategy_file.empty() ? sf::StrategyTable{} : load_strategies(o.strategy_file, spec.size);
    ds::Dataset data_set = create_dataset(o, 32);  // shared by the virtual devices of this process
    ds::Dataset::check_mnist(o.data_dir, "test");  // read after training, for the accuracy
    sf::comm::init(spec);
    if (!o.save_strategy_file.empty() && sf::comm::job().rank == 0) save_strategies(o.save_strategy_file, from_file);
    const bool several = sf::comm::job().local_ranks > 1;
    const std::string job_dir = several ? sf::new_job_dir(o.log_dir) : "";
    std::vector<sf::Tensor> trained;  // the whole parameters, for the test accuracy
    if (sf::comm::job().rank == 0)
      std::cout << fmt::format("shardflow: seed 001's MLP 784-512-512-10, operator-parallel on {} devices ({}), "
                               "sgd lr 0.01, batch 32, {} epoch(s), {} API{}, BLAS: {}\n",
                               sf::comm::job().size, several ? "virtual, one process" : "one per process", o.epochs,
                               o.api, o.strategy_file.empty() ? "" : ", strategies from " + o.strategy_file,
                               sf::blas_config());

    sf::comm::run_ranks([&] {
      sf::RankLog log(job_dir);
      // Rank 0 of a process holding several devices also prints its lines here.
      std::vector<std::ostream*> outs = {&log.out()};
      if (several && sf::comm::get_rank() == 0) outs.push_back(&std::cout);
      Network net;
      shard(net, from_file);
      auto optimizer = std::make_shared<nn::SGD>(net.trainable_params(), 1e-2f);
      nn::CrossEntropyLoss loss_fn;
      if (o.api == "model")
        train_model(o, net, optimizer, data_set, outs);
      else
        train_functional(o, net, *optimizer, loss_fn, data_set, outs);
      std::vector<sf::Tensor> whole = sf::gather_parameters(net.trainable_params());
      if (sf::comm::get_rank() == sf::comm::job().rank) trained = std::move(whole);
    });

    // Test accuracy of the trained network on one device, from the gathered parameters.
    sf::set_auto_parallel_context({});
    Network eval_net;
    sf::ParameterList params = eval_net.trainable_params();
    for (size_t i = 0; i < params.size(); ++i) params[i].value() = trained[i];
    sf::Model model(eval_net, nn::CrossEntropyLoss(), nn::SGD(params, 1e-2f));
    const double accuracy = model.eval_accuracy(create_dataset(o, 1000, "test"));
    std::cout << fmt::format("{} devices: test accuracy: {:.4f}{}\n", sf::comm::job().size, accuracy,
                             several ? fmt::format(" (loss lines in {}/rank.*/stdout)", job_dir) : "");
    sf::comm::release();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
