// A GPT-style decoder trained character by character on Debian's fortune cookies, with tensor
// (--tp), sequence (--sp) and data (--dp) parallel on one device matrix per rank group, every
// collective inserted by the redistribution planner from the model's layouts
// (shardflow/models/gpt.h, docs/transformer.md).
//
//   ./build/examples/gpt --devices 4 --tp 2 --sp --steps 20            # dp 2 x tp 2, one process
//   sfrun -n 2 ./build/examples/gpt --tp 2 --steps 20                  # 2 processes over zmq
//   mpirun -np 2 ./build/examples/gpt --tp 2 --steps 20
//   ./build/examples/gpt --dry-run 1024 --tp 8 --layers 4 --hidden 256 # the plan of 1024 ranks
//   ./build/examples/gpt --steps 300 --generate "Q: What"              # a greedy sample after training
//
// --batch is the global batch: every layout trains the 1-device run's batches, so its loss
// lines are the 1-device lines (within float rounding), which the tests check. --dp defaults to
// devices / tp. --mode auto annotates only the inputs and lets the strategy search choose the
// rest (--explain prints what it chose). After training, rank 0 prints the validation loss over
// --valid-batches batches of held-out cookies and, with --generate, a continuation (greedy, or
// sampled with --temperature and --top-k); under a pipeline it reads the trained parameters back
// from a checkpoint of the end of training (--checkpoint-dir, else --log-dir/final_checkpoint),
// since each rank holds only its stages. (Without a pipeline they are gathered from the ranks.)
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "examples/example_main.h"
#include "examples/strategy_options.h"
#include <shardflow/core/cli_checks.h>
#include <shardflow/models/gpt.h>
#include <shardflow/models/gpt_data.h>
#include <shardflow/shardflow.h>
#include <shardflow/train/checkpoint/reader.h>
#include <shardflow/train/checkpoint_dir_callback.h>
#include <shardflow/train/network_plan.h>

namespace {

namespace ds = sf::dataset;
namespace ex = sf::examples;
namespace models = sf::models;

struct Options {
  models::GptConfig model;
  int64_t batch = 8;  // global
  int64_t dp = 0;     // 0: devices / tp
  int64_t tp = 1;
  bool sp = false;
  int pp = 1;               // pipeline stages
  int micro_batches = 1;    // per batch; more than 1 (or --pp > 1) trains through a PipelineCell
  std::string schedule = "1f1b";
  bool clip_given = false;  // --clip on the command line: refused under a pipeline, which cannot clip yet
  std::string mode = "semi_auto";
  int64_t dry_run = 0;
  float lr = 1e-3f;
  float weight_decay = 0.01f;
  float clip = 1.0f;
  uint64_t seed = 1;
  std::string text_dir = ds::kFortunesDir;
  int64_t valid_batches = 4;
  std::string generate;
  int64_t generate_tokens = 120;
  float temperature = 0;  // 0: greedy
  int64_t top_k = 0;      // 0: every character
  std::string save_graphs;  // --save-graphs DIR: each rank's parallel IR
  bool time = false;        // --time: rank 0 prints each epoch's time per step
  ex::StrategyOptions strategies;
};

// The first `rows_wanted` windows of a split (all of them for 0), at most as many as it holds.
ds::Dataset windows(const ds::TextCorpus& corpus, ds::TextSplit split, int64_t seq, int64_t rows_wanted) {
  const int64_t available = corpus.num_windows(split, seq);
  return models::gpt_windows(corpus, split, seq, rows_wanted > 0 ? std::min(rows_wanted, available) : 0);
}

void add_model_options(CLI::App& app, Options& o) {
  app.add_option("--layers", o.model.layers, "decoder blocks")->check(sf::cli::kPositive);
  app.add_option("--hidden", o.model.hidden, "model width")->check(sf::cli::kPositive);
  app.add_option("--heads", o.model.heads, "attention heads (divide --hidden)")->check(sf::cli::kPositive);
  app.add_option("--seq", o.model.seq, "tokens per sample")->check(sf::cli::kPositive);
  app.add_option("--dropout", o.model.dropout, "dropout rate");
  app.add_option("--vocab-multiple", o.model.vocab_multiple,
                 "the embedding table's rows are the vocabulary rounded up to a multiple of this")
      ->check(sf::cli::kPositive);
  app.add_option("--batch", o.batch, "global batch size")->check(sf::cli::kPositive);
  app.add_option("--tp", o.tp, "tensor parallel degree")->check(sf::cli::kPositive);
  app.add_option("--dp", o.dp, "data parallel degree (default: devices / tp)")->check(sf::cli::kPositive);
  app.add_flag("--sp", o.sp, "sequence parallel in the LayerNorm, dropout and residual regions (with --tp)");
  app.add_option("--pp", o.pp, "pipeline stages (the embedding, the blocks and the head spread over them)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--micro-batches", o.micro_batches, "micro-batches per batch (a PipelineCell's micro_size)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--schedule", o.schedule, "pipeline schedule: 1f1b, gpipe or zb_h1");
  app.add_option("--mode", o.mode, "semi_auto (the model's layouts) or auto (inputs only; the search chooses)")
      ->check(CLI::IsMember({"semi_auto", "auto"}));
  app.add_option("--dry-run", o.dry_run, "plan N ranks and print the plan; nothing trains")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--lr", o.lr, "AdamW learning rate");
  app.add_option("--weight-decay", o.weight_decay, "AdamW decoupled weight decay (weights only)");
  app.add_option("--clip", o.clip, "clip gradients to this global norm (0: off; off under a pipeline)")
      ->each([&o](const std::string&) { o.clip_given = true; });
  app.add_option("--seed", o.seed, "initialisation seed");
  app.add_option("--text-dir", o.text_dir, "the fortune files");
  app.add_option("--valid-batches", o.valid_batches, "validation batches evaluated after training (0: none)")
      ->check(sf::cli::kNonNegative);
  app.add_option("--generate", o.generate, "after training, continue this prompt");
  app.add_option("--generate-tokens", o.generate_tokens, "characters --generate adds")->check(sf::cli::kPositive);
  app.add_option("--temperature", o.temperature,
                 "sample each character from softmax(logits / T), seeded by --seed (0: greedy, the most likely)")
      ->check(CLI::Range(0.0f, 100.0f))
      ->check(sf::cli::kNonNegative);  // and not NaN, which passes a range
  app.add_option("--top-k", o.top_k, "sample among the k most likely characters only (0: all; with --temperature)")
      ->check(sf::cli::kNonNegative);
  app.add_option("--save-graphs", o.save_graphs, "write each rank's parallel IR to DIR/rank_<r>/");
  app.add_flag("--time", o.time, "print each epoch's time per step (rank 0; the first epoch includes the warm-up)");
  ex::add_strategy_options(app, o.strategies);
}

// Whether the model trains through a PipelineCell.
bool pipelined(const Options& o) { return o.pp > 1 || o.micro_batches > 1; }

// The degrees for `devices` ranks, checked before any rank communicates.
models::GptParallel parallel_for(const Options& o, int64_t devices) {
  models::GptParallel p{.dp = o.dp, .tp = o.tp, .sp = o.sp};
  SF_ENFORCE(!o.sp || o.tp > 1, InvalidArgument, "gpt: --sp splits the sequence over the tensor-parallel ranks; "
             "it needs --tp 2 or more");
  SF_ENFORCE(devices % o.pp == 0, InvalidArgument, "gpt: {} devices are not divisible by --pp {}", devices, o.pp);
  const int64_t per_stage = devices / o.pp;
  if (p.dp == 0) {
    SF_ENFORCE(per_stage % o.tp == 0, InvalidArgument, "gpt: the {} devices of a stage are not divisible by --tp {}",
               per_stage, o.tp);
    p.dp = per_stage / o.tp;
  }
  SF_ENFORCE(p.dp * p.tp == per_stage, InvalidArgument,
             "gpt: --dp {} x --tp {} is {} ranks, but a stage has {} (devices / --pp)", p.dp, p.tp, p.dp * p.tp,
             per_stage);
  SF_ENFORCE(o.batch % o.micro_batches == 0, InvalidArgument, "gpt: --batch {} is not divisible by --micro-batches {}",
             o.batch, o.micro_batches);
  SF_ENFORCE((o.batch / o.micro_batches) % p.dp == 0, InvalidArgument,
             "gpt: a micro-batch of {} rows is not divisible by --dp {}", o.batch / o.micro_batches, p.dp);
  SF_ENFORCE(o.micro_batches >= o.pp, InvalidArgument,
             "gpt: --micro-batches {} is smaller than --pp {}; each stage needs a micro-batch of its own",
             o.micro_batches, o.pp);
  SF_ENFORCE(!pipelined(o) || !o.clip_given || o.clip == 0, InvalidArgument,
             "gpt: --clip is not supported with --pp or --micro-batches yet (each stage holds part of the gradients)");
  if (pipelined(o)) sf::pipeline::make_schedule(sf::pipeline::schedule_kind(o.schedule), o.pp, o.micro_batches, 1);
  return p;
}

void shard(models::Gpt& net, const Options& o, const models::GptParallel& p) {
  if (o.mode == "auto")
    net.shard_inputs(p.dp);
  else
    net.shard(p);
}

sf::AutoParallelContext context_for(const Options& o) {
  sf::AutoParallelContext c;
  c.parallel_mode = o.mode == "auto" ? sf::ParallelMode::kAutoParallel : sf::ParallelMode::kSemiAutoParallel;
  if (o.mode == "auto") c.search_mode = "sharding_propagation";
  c.strategy_ckpt_save_file = o.strategies.save_strategy_file;
  c.strategy_ckpt_load_file = o.strategies.strategy_file;
  // A pipeline writes its stages' IR itself (train/save_graphs.h); Model's callback does the rest.
  c.save_graphs = pipelined(o) && !o.save_graphs.empty();
  if (c.save_graphs) c.save_graphs_path = o.save_graphs;
  if (pipelined(o)) {
    // As examples/pipeline_parallel: every stage reads the whole batch and takes its rows.
    c.gradients_mean = true;
    c.dataset_strategy = "full_batch";
    c.pipeline_stages = o.pp;
    c.pipeline_scheduler = o.schedule;
  }
  return c;
}

// The network with its loss, as every rank builds it.
struct Network {
  models::Gpt net;
  std::optional<sf::nn::PipelineCell> cell;  // pipelined(o) only
  Network(const Options& o, const models::GptParallel& p) : net(o.model) {
    shard(net, o, p);
    if (!pipelined(o)) return;
    net.set_stages(o.pp);
    cell.emplace(sf::nn::WithLossCell(net, std::make_shared<models::GptLoss>(net)), o.micro_batches);
  }
};

std::vector<sf::Tensor> one_batch(const ds::Dataset& set) {
  ds::BatchIterator it = set.iterator();
  const std::vector<sf::Tensor>* b = it.next();
  SF_ENFORCE(b != nullptr, InvalidArgument, "gpt: no batch to plan with");
  return *b;
}

bool evaluates(const Options& o) { return o.valid_batches > 0 || !o.generate.empty(); }

// The character after a prompt whose last logits are `row` (the padded vocabulary's tail is
// never drawn): the most likely one, or under --temperature a draw from the top --top-k
// characters' softmax(logits / T), the `t`-th uniform number of --seed's sampling stream.
int32_t next_character(const Options& o, const float* row, uint64_t t) {
  const int64_t v = o.model.vocab;
  if (o.temperature == 0) return static_cast<int32_t>(std::max_element(row, row + v) - row);
  std::vector<int32_t> order(static_cast<size_t>(v));
  for (int32_t c = 0; c < v; ++c) order[static_cast<size_t>(c)] = c;
  std::stable_sort(order.begin(), order.end(), [row](int32_t a, int32_t b) { return row[a] > row[b]; });
  if (o.top_k > 0 && o.top_k < v) order.resize(static_cast<size_t>(o.top_k));
  std::vector<double> weight(order.size());
  double total = 0;
  for (size_t i = 0; i < order.size(); ++i)
    total += weight[i] = std::exp((static_cast<double>(row[order[i]]) - row[order[0]]) / o.temperature);
  constexpr uint64_t kSamplingStream = 0x5a3d1e;  // apart from the initialisation's streams
  double u = sf::uniform_at(o.seed, kSamplingStream, t) * total;
  for (size_t i = 0; i < order.size(); ++i)
    if ((u -= weight[i]) < 0) return order[i];
  return order.back();
}

// Rank 0, after training, on the gathered parameters: the validation loss, then the samples.
void evaluate(const Options& o, const ds::TextCorpus& corpus, const std::vector<sf::Tensor>& trained) {
  models::Gpt net(o.model);
  sf::NamedTensors named;
  sf::ParameterList params = net.get_parameters();
  for (size_t i = 0; i < params.size(); ++i) named.emplace_back(params[i].name(), trained[i]);
  sf::load_param_into_net(net, named);
  net.set_train(false);
  if (o.valid_batches > 0) {
    sf::ForwardFunction loss_of(
        [&net](sf::GraphBuilder& b, const std::vector<sf::Value>& in) { return net.loss(b, net(b, in[0]), in[1]); },
        net.get_parameters());
    const ds::Dataset valid = windows(corpus, ds::TextSplit::kValidation, o.model.seq, o.valid_batches * o.batch)
                                  .batch(o.batch);
    ds::BatchIterator it = valid.iterator();
    double sum = 0;
    int64_t n = 0;
    while (const std::vector<sf::Tensor>* b = it.next()) {
      sum += loss_of(*b).f32()[0];
      ++n;
    }
    sf::write_line(std::cout, fmt::format("validation loss: {:.4f} over {} batches of {} x {} characters",
                                          n ? sum / n : 0.0, n, o.batch, o.model.seq));
  }
  if (o.generate.empty()) return;
  sf::ForwardFunction logits_of([&net](sf::GraphBuilder& b, const std::vector<sf::Value>& in) { return net(b, in[0]); },
                                net.get_parameters());
  std::vector<int32_t> text = corpus.encode(o.generate);
  const int64_t seq = o.model.seq, vp = o.model.padded_vocab();
  for (int64_t t = 0; t < o.generate_tokens; ++t) {
    // The last seq characters at positions 0..n-1; the causal mask keeps the rest out of them.
    const int64_t n = std::min<int64_t>(seq, static_cast<int64_t>(text.size()));
    sf::Tensor data({1, seq + 1}, sf::DType::kI32);
    std::fill_n(data.i32(), seq + 1, 0);
    std::copy(text.end() - n, text.end(), data.i32() + 1);
    const float* row = logits_of({data}).f32() + (n - 1) * vp;
    text.push_back(next_character(o, row, static_cast<uint64_t>(t)));
  }
  sf::write_line(std::cout, fmt::format("sample: {}", corpus.decode(text)));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  ex::Example example("A GPT-style decoder on fortune cookies, with tensor, sequence and data parallel",
                      ex::kLogDir | ex::kEpochs | ex::kSteps | ex::kPrintEvery | ex::kCheckpoint);
  example.common().steps = 20;
  add_model_options(example.cli(), o);

  std::optional<ds::TextCorpus> corpus;
  ds::Dataset train_set;
  models::GptParallel par;
  example.prepare = [&](const sf::comm::JobSpec& job) {
    corpus.emplace(ds::TextCorpus::read(o.text_dir));
    o.model.vocab = corpus->vocab().size();
    o.model.check();
    // A malformed strategy file is refused here, before any rank communicates (the step checks
    // its entries against the graph again when it is built).
    if (!o.strategies.strategy_file.empty()) sf::load_strategy_file(o.strategies.strategy_file);
    // A prompt with a character the corpus lacks is refused now, not after training.
    if (!o.generate.empty()) corpus->encode(o.generate);
    const int64_t devices = o.dry_run > 0 ? o.dry_run : job.size;
    par = parallel_for(o, devices);
    par.check(o.model);
    const int64_t steps = example.common().steps;
    train_set = windows(*corpus, ds::TextSplit::kTrain, o.model.seq, steps > 0 ? steps * o.batch : 0)
                    .shuffle(o.seed)
                    .batch(o.batch);
    if (o.dry_run == 0) return ex::Next::kJoin;
    sf::set_auto_parallel_context(context_for(o));
    sf::set_seed(o.seed);
    Network n(o, par);
    const std::vector<sf::Tensor> b = one_batch(train_set);
    if (n.cell) {
      const sf::PipelinePlan plan = sf::plan_pipeline(*n.cell, {b[0].shape(), b[1].shape()},
                                                      {b[0].dtype(), b[1].dtype()}, devices, context_for(o));
      std::cout << plan.str(o.strategies.explain, "the model's layouts");
      return ex::Next::kDone;
    }
    models::Gpt& net = n.net;
    const sf::NetworkPlan plan = sf::plan_network(
        net, [&net](sf::GraphBuilder& g, const std::vector<sf::Value>& in) { return net.loss(g, net(g, in[0]), in[1]); },
        {b[0].shape(), b[1].shape()}, {b[0].dtype(), b[1].dtype()}, devices);
    sf::write_line(std::cout, plan.str(o.strategies.explain));
    return ex::Next::kDone;
  };
  example.run = [&] {
    sf::set_auto_parallel_context(context_for(o));
    sf::set_seed(o.seed);
    sf::comm::run_ranks([&] {
      const int rank = sf::comm::get_rank();
      Network n(o, par);
      models::Gpt& net = n.net;
      // Under a pipeline each rank's optimizer steps the parameters of its own stages.
      auto opt = std::make_shared<sf::nn::AdamW>(n.cell ? net.infer_param_pipeline_stage() : net.trainable_params(),
                                                 o.lr, 0.9f, 0.999f, 1e-8f, o.weight_decay,
                                                 sf::nn::decay_except_vectors);
      if (o.clip > 0 && !n.cell) opt->set_max_grad_norm(o.clip);
      std::optional<sf::Model> built;
      if (n.cell)
        built.emplace(*n.cell, opt);
      else
        built.emplace(net, std::make_shared<models::GptLoss>(net), opt);
      sf::Model& model = *built;
      std::vector<sf::CallbackPtr> callbacks;
      if (rank == 0) callbacks.push_back(std::make_shared<sf::LossMonitor>(example.common().print_every));
      if (o.time && rank == 0) callbacks.push_back(std::make_shared<sf::TimeMonitor>(std::cout));
      if (!o.save_graphs.empty() && !n.cell) callbacks.push_back(std::make_shared<sf::SaveGraphs>(model, o.save_graphs));
      const sf::ResumePoint from = example.checkpointing(model, train_set, callbacks);
      // Under a pipeline the evaluation reads the trained parameters from a checkpoint of the end
      // of training: --checkpoint-dir's, else one in --log-dir.
      const std::string final_dir = example.common().checkpoint_dir.empty()
                                        ? example.common().log_dir + "/final_checkpoint"
                                        : example.common().checkpoint_dir;
      if (n.cell && evaluates(o) && example.common().checkpoint_dir.empty()) {
        // The previous run's: a step is saved once. Removed before the first step, which every
        // rank must reach before any saves.
        if (rank == 0) std::filesystem::remove_all(final_dir);
        callbacks.push_back(std::make_shared<sf::CheckpointDir>(final_dir, 0, 1, false));
      }
      model.train(example.common().epochs, train_set, callbacks, from);
      if (rank == 0 && o.strategies.explain && model.semi_auto_program() != nullptr)
        sf::write_line(std::cout, ex::explain(*model.semi_auto_program(), net.strategies(), "the model's layouts"));
      if (!evaluates(o)) return;
      std::vector<sf::Tensor> trained;
      if (n.cell) {
        // A rank holds only its stages' parameters: rank 0 reads them whole from the checkpoint
        // every rank has just saved (committed when train returns).
        if (rank == 0) {
          sf::ckpt::CheckpointReader ckpt(final_dir);
          for (const sf::Parameter& p : net.get_parameters()) trained.push_back(ckpt.read_whole(p.name()));
        }
      } else {
        trained = sf::gather_parameters(net.get_parameters());
      }
      if (rank == 0) evaluate(o, *corpus, trained);
    });
  };
  return example.main(argc, argv);
}
