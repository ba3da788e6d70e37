// Training throughput (tokens/s) of the GPT decoder (shardflow/models/gpt.h) on 1 device, with
// every step's loss, so that bench/gpt_peer_torch.py can train the same model in PyTorch on the
// same initial weights and batches and bench/compare_gpt_torch.sh can check the two losses agree
// before it compares speeds (a faster run of different math would prove nothing).
//
//   ./build/bench/gpt_tokens [--layers 4 --hidden 256 --heads 4 --seq 128 --batch 8 --steps 50]
//                            [--threads T] [--lr 1e-3] [--dump DIR]
//
// Dropout 0 and no gradient clipping (both sides must compute the same thing); AdamW as the
// example trains it (decay on the 2+ dim parameters only). The batches are the fortune windows in
// file order, no shuffle. Timing: the first step is a warm-up (it builds the graph and faults in
// the buffers); tokens/s = batch * seq * (steps - 1) / the wall time from the end of step 1 to
// the end of the last step, the same window the peer times.
//
// --dump DIR writes what the peer needs, as .npy files written by hand (numpy reads them
// directly): DIR/config.txt (key value lines), DIR/params.txt (one "index name shape" line per
// parameter, in get_parameters() order), DIR/pNNN.npy (its initial float32 values),
// DIR/data.npy (steps, batch, seq + 1) int32 and DIR/labels.npy (steps, batch, seq) int32.
//
// Prints "step,k,loss" per step and one "RESULT,..." CSV line after a "HEADER,..." line.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include <shardflow/core/cli_checks.h>
#include <shardflow/data/text_corpus.h>
#include <shardflow/models/gpt.h>
#include <shardflow/models/gpt_data.h>
#include <shardflow/ops/blas.h>
#include <shardflow/shardflow.h>

namespace {

namespace ds = sf::dataset;
using Clock = std::chrono::steady_clock;

// A version 1.0 .npy file: magic, header length, a dict padded with spaces to a multiple of 64.
void write_npy(const std::filesystem::path& path, const char* descr, const std::vector<int64_t>& shape,
               const void* bytes, size_t size) {
  std::string dims;
  for (int64_t d : shape) dims += fmt::format("{},", d);
  if (shape.size() > 1) dims.pop_back();  // (n,) keeps its comma, (a,b) has none
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  header.append(64 - (10 + header.size() + 1) % 64, ' ').push_back('\n');
  std::ofstream f(path, std::ios::binary);
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.write(reinterpret_cast<const char*>(&len), 2);  // little-endian on every machine this runs on
  f << header;
  f.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(size));
  SF_ENFORCE(f.good(), IoError, "gpt_tokens: cannot write {}", path.string());
}

void dump(const std::string& dir, const sf::models::GptConfig& c, int64_t batch, int64_t steps, float lr, float wd,
          sf::ParameterList params, const ds::Dataset& set) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  std::ofstream(fs::path(dir) / "config.txt")
      << fmt::format("vocab {}\npadded_vocab {}\nlayers {}\nhidden {}\nheads {}\nseq {}\nbatch {}\nsteps {}\n"
                     "lr {}\nweight_decay {}\n",
                     c.vocab, c.padded_vocab(), c.layers, c.hidden, c.heads, c.seq, batch, steps, lr, wd);
  std::ofstream names(fs::path(dir) / "params.txt");
  for (size_t i = 0; i < params.size(); ++i) {
    const sf::Tensor& v = params[i].value();
    names << fmt::format("{} {} {}\n", i, params[i].name(), fmt::join(v.shape(), "x"));
    write_npy(fs::path(dir) / fmt::format("p{:03}.npy", i), "<f4", v.shape(), v.f32(),
              static_cast<size_t>(v.numel()) * sizeof(float));
  }
  std::vector<int32_t> data, labels;
  ds::BatchIterator it = set.iterator();
  while (const std::vector<sf::Tensor>* b = it.next()) {
    data.insert(data.end(), (*b)[0].i32(), (*b)[0].i32() + (*b)[0].numel());
    labels.insert(labels.end(), (*b)[1].i32(), (*b)[1].i32() + (*b)[1].numel());
  }
  write_npy(fs::path(dir) / "data.npy", "<i4", {steps, batch, c.seq + 1}, data.data(), data.size() * 4);
  write_npy(fs::path(dir) / "labels.npy", "<i4", {steps, batch, c.seq}, labels.data(), labels.size() * 4);
}

// Each step's loss, printed as it ends, and the clock at the end of each step.
struct StepClock : sf::Callback {
  std::vector<Clock::time_point> ends;
  float last = 0;
  void on_step_end(const sf::RunContext& c) override {
    ends.push_back(Clock::now());
    last = c.loss;
    std::cout << fmt::format("step,{},{:.7f}\n", c.global_step, c.loss);
  }
};

}  // namespace

int main(int argc, char** argv) {
  sf::models::GptConfig c{.layers = 4, .hidden = 256, .heads = 4, .seq = 128, .dropout = 0.0f};
  int64_t batch = 8, steps = 50;
  int threads = 1, splits = 0;
  float lr = 1e-3f, weight_decay = 0.01f;
  uint64_t seed = 1;
  std::string dump_dir, text_dir = ds::kFortunesDir;
  CLI::App app{"shardflow GPT decoder training throughput (tokens/s) and per-step loss"};
  app.add_option("--layers", c.layers)->check(sf::cli::kPositive);
  app.add_option("--hidden", c.hidden)->check(sf::cli::kPositive);
  app.add_option("--heads", c.heads)->check(sf::cli::kPositive);
  app.add_option("--seq", c.seq)->check(sf::cli::kPositive);
  app.add_option("--batch", batch)->check(sf::cli::kPositive);
  app.add_option("--steps", steps, "steps, the first a warm-up")->check(CLI::Range(int64_t{2}, int64_t{1} << 30));
  app.add_option("--threads", threads, "actor worker threads")->check(sf::cli::kPositive);
  app.add_option("--splits", splits, "row blocks per batch (0 = one per thread)")->check(sf::cli::kNonNegative);
  app.add_option("--lr", lr, "AdamW learning rate");
  app.add_option("--weight-decay", weight_decay, "AdamW decoupled weight decay (2+ dim parameters)");
  app.add_option("--seed", seed, "initialisation seed");
  app.add_option("--text-dir", text_dir, "the fortune files");
  app.add_option("--dump", dump_dir, "write the initial parameters and every batch here for the peer");
  CLI11_PARSE(app, argc, argv);
  try {
    const ds::TextCorpus corpus = ds::TextCorpus::read(text_dir);
    c.vocab = static_cast<int64_t>(corpus.vocab().size());
    c.check();
    const ds::Dataset train_set =
        sf::models::gpt_windows(corpus, ds::TextSplit::kTrain, c.seq, steps * batch).batch(batch);
    sf::set_seed(seed);
    sf::models::Gpt net(c);
    auto opt = std::make_shared<sf::nn::AdamW>(net.trainable_params(), lr, 0.9f, 0.999f, 1e-8f, weight_decay,
                                               sf::nn::decay_except_vectors);
    sf::Model model(net, std::make_shared<sf::models::GptLoss>(net), opt,
                    {.threads = threads, .batch_splits = splits});
    if (!dump_dir.empty()) dump(dump_dir, c, batch, steps, lr, weight_decay, net.get_parameters(), train_set);
    auto clock = std::make_shared<StepClock>();
    model.train(1, train_set, {clock});
    const double secs = std::chrono::duration<double>(clock->ends.back() - clock->ends.front()).count();
    const double tokens = static_cast<double>(batch * c.seq * (steps - 1));
    std::cout << "HEADER,what,threads,layers,hidden,seq,batch,steps,tokens_per_s,final_loss,blas\n"
              << fmt::format("RESULT,gpt,{},{},{},{},{},{},{:.1f},{:.6f},{}\n", threads, c.layers, c.hidden, c.seq,
                             batch, steps, tokens / secs, clock->last, sf::blas_config());
  } catch (const sf::Error& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
