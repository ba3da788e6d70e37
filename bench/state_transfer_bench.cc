// The elastic state transfer (train/state_transfer.h: what a joining rank receives from rank 0)
// between two processes, against one zmq transport message of the same bytes between two
// processes, in one run.
//
//   ./build/bench/state_transfer_bench [--hidden 4096] [--repeats 5] [--zmq-scheme ipc]
//
// The state is data_parallel's network at --hidden (examples/data_parallel.cc): the f32 tensors
// 784 x H, H, H x H, H, H x 10 and 10, and a one-element i32 step, with its scalars. Three ways,
// each on a fresh pair of processes (a fork; ranks meet through a rendezvous on 127.0.0.1:--port
// and the next ports, or ipc with --zmq-scheme ipc):
//
//   message        one Transport::send of a tensor of the state's bytes
//   state          send_training_state, received into fresh memory
//   state_readied  the same, the receiver having readied its buffers first (BufferPool::prefault
//                  of training_state_message_bytes), as a joining rank does before it asks
//
// The first transfer of a pair is "cold" (a fresh process, as a joiner is), then --repeats more.
// Per transfer rank 1 says it is ready, and rank 0 times from its send to rank 1's answer that
// it holds it all. Rank 0 prints per way
//
//   RESULT,state_transfer,<way>,<bytes>,<cold ms>,<warm ms (median)>
//
// and each state way's time over one warm message's.
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <string>
#include <vector>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/zmq/transport.h>
#include <shardflow/core/cli_checks.h>
#include <shardflow/train/state_transfer.h>

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Config {
  int64_t hidden = 4096;
  int repeats = 5, port = 29760;
  std::string scheme = "ipc";
};

// What one way measured: the first transfer and the warm ones, in seconds.
struct Timing {
  double cold = 0;
  std::vector<double> warm;
};

// data_parallel's state at width `hidden`, every element distinct enough to check.
sf::TrainingState dp_state(int64_t hidden) {
  sf::TrainingState s;
  const std::vector<std::pair<std::string, sf::Shape>> shapes = {
      {"fc1.weight", {784, hidden}}, {"fc1.bias", {hidden}}, {"fc2.weight", {hidden, hidden}},
      {"fc2.bias", {hidden}},        {"fc3.weight", {hidden, 10}}, {"fc3.bias", {10}}};
  for (const auto& [name, shape] : shapes) s.tensors.emplace_back(name, sf::Tensor::full(shape, 0.5f));
  s.tensors.emplace_back("global_step", sf::Tensor::empty({1}, sf::DType::kI32));
  s.scalars = {{"version", 1}, {"global_step", 40}, {"epoch", 0}, {"step_in_epoch", 40}};
  return s;
}

uint64_t state_bytes(const sf::TrainingState& s) {
  uint64_t n = 0;
  for (const auto& [name, t] : s.tensors) n += static_cast<uint64_t>(t.nbytes());
  return n;
}

// The three ways of moving the bytes.
enum class Way { kMessage, kState, kStateReadied };

const char* way_name(Way w) {
  return w == Way::kMessage ? "message" : w == Way::kState ? "state" : "state_readied";
}

// One pair of processes, `1 + repeats` transfers one way; rank 0's timings (rank 1's are empty).
// Before each, rank 1 says it is ready (with kStateReadied once it has readied its buffers, as a
// joiner does before it asks to join), and rank 0's clock starts then.
Timing run_pair(const Config& cfg, int port, Way way) {
  std::fflush(stdout);
  const pid_t child = ::fork();
  const int rank = child == 0 ? 1 : 0;
  Timing out;
  int rc = 0;
  try {
    sf::comm::ZmqJoin join;
    join.rank = rank;
    join.size = 2;
    join.rendezvous = cfg.scheme == "ipc" ? fmt::format("ipc:///tmp/sfbench-state-{}", port)
                                          : fmt::format("tcp://127.0.0.1:{}", port);
    join.options.secret = "state_transfer_bench";
    auto t = sf::comm::make_zmq_world(join);
    auto& pool = sf::comm::BufferPool::global();
    const sf::comm::Tag data = 1, done = 2, ready = 3;
    const sf::TrainingState state = dp_state(cfg.hidden);
    const sf::Tensor message = way == Way::kMessage
                                   ? sf::Tensor::full({static_cast<int64_t>(state_bytes(state) / 4)}, 0.5f)
                                   : sf::Tensor();
    for (int i = 0; i <= cfg.repeats; ++i) {
      if (rank == 0) {
        pool.release(t->recv(1, ready, 60s));
        const auto t0 = Clock::now();
        if (way == Way::kMessage)
          t->send(1, data, message);
        else
          sf::send_training_state(*t, 1, state, 40);
        pool.release(t->recv(1, done, 60s));
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (i == 0)
          out.cold = s;
        else
          out.warm.push_back(s);
        continue;
      }
      if (way == Way::kStateReadied) {
        const std::vector<uint64_t> sizes = sf::training_state_message_bytes(state);
        pool.prefault(std::vector<size_t>(sizes.begin(), sizes.end()));
      }
      t->send(0, ready, sf::Tensor::scalar(1.0f));
      if (way == Way::kMessage) {
        const sf::Tensor got = t->recv(0, data, 60s);
        if (got.numel() != message.numel() || got.f32()[got.numel() - 1] != 0.5f)
          throw std::runtime_error("the message arrived wrong");
        pool.release(got);
      } else {
        const sf::ReceivedState got = sf::recv_training_state(*t, 0, 60s);
        const sf::Tensor& big = got.state.tensors[2].second;
        if (got.bytes != state_bytes(state) || big.f32()[big.numel() - 1] != 0.5f)
          throw std::runtime_error("the state arrived wrong");
      }
      t->send(0, done, sf::Tensor::scalar(1.0f));
    }
    t->close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "state_transfer_bench: rank %d: %s\n", rank, e.what());
    rc = 1;
  }
  if (child == 0) std::_Exit(rc);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("a pair failed");
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  CLI::App app{"the elastic state transfer against one zmq message of the same bytes, two processes"};
  app.add_option("--hidden", cfg.hidden, "data_parallel's hidden width: the state's size")
      ->check(CLI::Range(int64_t{1}, int64_t{16384}));
  app.add_option("--repeats", cfg.repeats, "warm transfers after the cold one")->check(sf::cli::kPositive);
  app.add_option("--zmq-scheme", cfg.scheme, "rendezvous and lanes: tcp or ipc")->check(CLI::IsMember({"tcp", "ipc"}));
  app.add_option("--port", cfg.port, "loopback port of the first pair's rendezvous (tcp); the second uses the next");
  CLI11_PARSE(app, argc, argv);
  const sf::TrainingState state = dp_state(cfg.hidden);
  const uint64_t bytes = state_bytes(state);
  try {
    std::vector<Timing> got;
    for (Way w : {Way::kMessage, Way::kState, Way::kStateReadied})
      got.push_back(run_pair(cfg, cfg.port + static_cast<int>(got.size()), w));
    for (Way w : {Way::kMessage, Way::kState, Way::kStateReadied}) {
      const Timing& g = got[static_cast<size_t>(w)];
      std::printf("RESULT,state_transfer,%s,%llu,%.3f,%.3f\n", way_name(w), static_cast<unsigned long long>(bytes),
                  g.cold * 1e3, median(g.warm) * 1e3);
    }
    const double link = median(got[0].warm);
    std::printf("against one warm message: state %.2fx cold, %.2fx warm; state_readied %.2fx cold, %.2fx warm\n",
                got[1].cold / link, median(got[1].warm) / link, got[2].cold / link, median(got[2].warm) / link);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "state_transfer_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
