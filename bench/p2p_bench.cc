// Point-to-point between two processes on this host: a ping-pong of one message each way,
// over the zmq transport (tensors, Transport::send/recv) or over a plain TCP loop on loopback
// (the baseline: one connected socket, blocking send and recv of the whole buffer into
// preallocated memory, TCP_NODELAY) — the best a hand-written loop does with the same bytes.
//
//   ./build/bench/sfbench_p2p --mode tcp --sizes 1M,16M
//   ./build/bench/sfbench_p2p --mode zmq --sizes 1M,16M [--zmq-scheme ipc]
//
// The program forks: the parent is rank 0, the child rank 1; zmq ranks meet through a tcp
// rendezvous on 127.0.0.1:--port (ipc with --zmq-scheme ipc). Per size: --warmup round trips,
// then round trips until --budget seconds have passed (at least --min-iters); time = round trip
// / 2, bandwidth = bytes / time. Rank 0 prints `RESULT,p2p,<mode>,<bytes>,<us>,<GB/s>,<iters>`
// per size (CSV) and checks the last message that came back (first and last element).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <string>
#include <thread>
#include <vector>

#include <shardflow/core/cli_checks.h>
#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/zmq/transport.h>

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Config {
  std::string mode = "zmq", scheme = "tcp";
  std::vector<int64_t> sizes;
  int port = 29710, warmup = 5, min_iters = 10;
  double budget = 0.5;
};

int64_t parse_size(std::string s) {
  int64_t mult = 1;
  const char u = s.empty() ? 0 : s.back();
  if (u == 'K' || u == 'k') mult = 1 << 10;
  if (u == 'M' || u == 'm') mult = 1 << 20;
  if (u == 'G' || u == 'g') mult = int64_t{1} << 30;
  if (mult > 1) s.pop_back();
  return std::stoll(s) * mult;
}

void report(const char* mode, int64_t bytes, double seconds, int iters) {
  const double one_way = seconds / iters / 2;
  std::printf("RESULT,p2p,%s,%lld,%.3f,%.4f,%d\n", mode, static_cast<long long>(bytes), one_way * 1e6,
              bytes / one_way / 1e9, iters);
  std::fflush(stdout);
}

// Runs `round` (one round trip) warm-up times, then until the budget is spent; the budget
// decision is rank 0's, passed along by `agree` so both ranks stop together.
template <class Round, class Agree>
void time_rounds(const Config& cfg, int rank, const char* mode, int64_t bytes, Round round, Agree agree) {
  for (int i = 0; i < cfg.warmup; ++i) round();
  int iters = 0;
  double spent = 0;
  for (;;) {
    const auto t0 = Clock::now();
    for (int i = 0; i < cfg.min_iters; ++i) round();
    spent += std::chrono::duration<double>(Clock::now() - t0).count();
    iters += cfg.min_iters;
    if (!agree(spent < cfg.budget)) break;
  }
  if (rank == 0) report(mode, bytes, spent, iters);
}

// ---- plain TCP ----

void send_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) throw std::runtime_error(fmt::format("send: {}", std::strerror(errno)));
    p += k, n -= static_cast<size_t>(k);
  }
}
void recv_all(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, MSG_WAITALL);
    if (k <= 0) throw std::runtime_error(fmt::format("recv: {}", k == 0 ? "closed" : std::strerror(errno)));
    p += k, n -= static_cast<size_t>(k);
  }
}

int tcp_pair(int rank, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  int fd = -1;
  if (rank == 0) {
    const int l = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l, 1) != 0)
      throw std::runtime_error(fmt::format("listen on port {}: {}", port, std::strerror(errno)));
    fd = ::accept(l, nullptr, nullptr);
    ::close(l);
  } else {
    for (int tries = 0; tries < 500; ++tries) {
      fd = ::socket(AF_INET, SOCK_STREAM, 0);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) break;
      ::close(fd);
      fd = -1;
      std::this_thread::sleep_for(10ms);
    }
  }
  if (fd < 0) throw std::runtime_error("no connection");
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

void run_tcp(const Config& cfg, int rank) {
  const int fd = tcp_pair(rank, cfg.port);
  for (int64_t bytes : cfg.sizes) {
    std::vector<char> buf(static_cast<size_t>(bytes), static_cast<char>(rank + 1));
    auto round = [&] {
      if (rank == 0) {
        send_all(fd, buf.data(), buf.size());
        recv_all(fd, buf.data(), buf.size());
      } else {
        recv_all(fd, buf.data(), buf.size());
        send_all(fd, buf.data(), buf.size());
      }
    };
    auto agree = [&](bool go) {
      char c = go ? 1 : 0;
      if (rank == 0)
        send_all(fd, &c, 1);
      else
        recv_all(fd, &c, 1);
      return c != 0;
    };
    time_rounds(cfg, rank, "tcp", bytes, round, agree);
  }
  ::close(fd);
}

// ---- the zmq transport ----

void run_zmq(const Config& cfg, int rank) {
  sf::comm::ZmqJoin join;
  join.rank = rank;
  join.size = 2;
  join.rendezvous = cfg.scheme == "ipc" ? fmt::format("ipc:///tmp/sfbench-p2p-{}", cfg.port)
                                        : fmt::format("tcp://127.0.0.1:{}", cfg.port);
  join.options.secret = "sfbench_p2p";
  auto t = sf::comm::make_zmq_world(join);
  const auto timeout = 60s;
  auto& pool = sf::comm::BufferPool::global();
  for (int64_t bytes : cfg.sizes) {
    const sf::Tensor mine = sf::Tensor::full({bytes / 4}, static_cast<float>(rank + 1));
    float first = 0, last = 0;
    auto round = [&] {
      if (rank == 0) {
        t->send(1, 1, mine);
        sf::Tensor back = t->recv(1, 1, timeout);
        first = back.f32()[0], last = back.f32()[back.numel() - 1];
        pool.release(back);
      } else {
        t->send(0, 1, t->recv(0, 1, timeout));  // the received buffer goes back as it is
      }
    };
    auto agree = [&](bool go) {
      if (rank == 0) {
        t->send(1, 2, sf::Tensor::scalar(go ? 1.0f : 0.0f));
        return go;
      }
      return t->recv(0, 2, timeout).item() != 0.0f;
    };
    time_rounds(cfg, rank, "zmq", bytes, round, agree);
    if (rank == 0 && (first != 1.0f || last != 1.0f))
      throw std::runtime_error(fmt::format("{} bytes came back as {} .. {}, not 1", bytes, first, last));
  }
  t->close();
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  std::string sizes = "1M,16M";
  CLI::App app{"point-to-point ping-pong between two processes: the zmq transport or a plain TCP loop"};
  app.add_option("--mode", cfg.mode, "zmq or tcp")->check(CLI::IsMember({"zmq", "tcp"}));
  app.add_option("--zmq-scheme", cfg.scheme, "zmq rendezvous and lanes: tcp or ipc")->check(CLI::IsMember({"tcp", "ipc"}));
  app.add_option("--sizes", sizes, "comma-separated message sizes, K/M/G = KiB/MiB/GiB");
  app.add_option("--port", cfg.port, "loopback port for the pair or the rendezvous");
  app.add_option("--budget", cfg.budget, "seconds of timed round trips per size")->check(sf::cli::kPositive);
  app.add_option("--warmup", cfg.warmup)->check(sf::cli::kNonNegative);
  app.add_option("--min-iters", cfg.min_iters)->check(sf::cli::kPositive);
  CLI11_PARSE(app, argc, argv);
  for (size_t b = 0, e; b <= sizes.size(); b = e + 1) {
    e = sizes.find(',', b);
    if (e == std::string::npos) e = sizes.size();
    if (e > b) cfg.sizes.push_back(parse_size(sizes.substr(b, e - b)) / 4 * 4);
  }
  std::fflush(stdout);
  const pid_t child = ::fork();
  const int rank = child == 0 ? 1 : 0;
  int rc = 0;
  try {
    if (cfg.mode == "tcp")
      run_tcp(cfg, rank);
    else
      run_zmq(cfg, rank);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sfbench_p2p: rank %d: %s\n", rank, e.what());
    rc = 1;
  }
  if (child == 0) std::_Exit(rc);
  int status = 0;
  ::waitpid(child, &status, 0);
  return rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ? 1 : 0;
}
