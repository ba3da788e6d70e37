// Measures the zmq transport (a measurement program, not a test; docs/zmq_transport.md):
//
//   zmq_allreduce_bench allreduce [ranks] [tcp|ipc] [MiB,...]
//       forks `ranks` processes that join one world through an ipc rendezvous and time
//       back-to-back f32 AllReduce (sum) calls per size; prints one line per size from rank 0:
//       the slowest rank's mean time per call, algbw = bytes/time, busbw = algbw*2(n-1)/n.
//   zmq_allreduce_bench pingpong [tcp|ipc] [sizes]
//       two processes; rank 0 sends, rank 1 sends it back; prints half the round trip per size.
//   zmq_allreduce_bench curve [MiB]
//       raw libzmq, two processes over tcp://127.0.0.1: streams 16 MiB messages DEALER -> ROUTER
//       with the NULL mechanism (what the transport uses after its handshake) and with CURVE
//       (encrypted and authenticated), the receiver copying each into a reused buffer as the
//       transport does; prints GB/s for both.
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/comm.h>
#include <shardflow/comm/zmq/transport.h>

using namespace sf;
using namespace sf::comm;
using Clock = std::chrono::steady_clock;

namespace {

// "1,4,16" in MiB; a 'k' suffix means KiB ("4k"). Returns bytes.
std::vector<int64_t> parse_sizes(const char* s) {
  std::vector<int64_t> out;
  for (const char* p = s; *p;) {
    char* end = nullptr;
    const int64_t v = std::strtoll(p, &end, 10);
    out.push_back(*end == 'k' ? v << 10 : v << 20);
    p = end;
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return out;
}

int allreduce_rank(int rank, int n, bool tcp, const std::string& rv, const std::vector<int64_t>& sizes) {
  ZmqJoin j;
  j.rank = rank;
  j.size = n;
  j.rendezvous = rv;
  j.data_scheme = tcp ? ZmqScheme::kTcp : ZmqScheme::kIpc;
  j.options.secret = "bench";
  auto world = make_zmq_world(j);
  Group g = world_group(world);
  for (int64_t bytes : sizes) {
    const int64_t count = bytes / 4;  // f32 elements
    Tensor x = Tensor::full({count}, 1.0f);
    for (int w = 0; w < 2; ++w) all_reduce(x, {.group = g});  // warm the pools
    // Every rank must make the same number of calls: agree on it from a probe of 3.
    barrier({.group = g});
    auto start = Clock::now();
    for (int i = 0; i < 3; ++i) all_reduce(x, {.group = g});
    const double probe = std::chrono::duration<double>(Clock::now() - start).count() / 3;
    const double slowest = all_reduce(Tensor::full({1}, static_cast<float>(probe)), {.group = g, .op = ReduceOp::kMax}).item();
    const int iters = std::clamp(static_cast<int>(2.0 / slowest), 5, 2000);  // about 2 s per size
    barrier({.group = g});
    start = Clock::now();
    for (int i = 0; i < iters; ++i) all_reduce(x, {.group = g});
    const double secs = std::chrono::duration<double>(Clock::now() - start).count() / iters;
    const double worst = all_reduce(Tensor::full({1}, static_cast<float>(secs)), {.group = g, .op = ReduceOp::kMax}).item();
    if (rank == 0) {
      const double algbw = static_cast<double>(bytes) / worst / 1e9;
      std::printf("zmq %s ranks=%d size=%6lld KiB time=%9.3f ms algbw=%.3f GB/s busbw=%.3f GB/s iters=%d\n",
                  tcp ? "tcp" : "ipc", n, static_cast<long long>(bytes >> 10), worst * 1e3, algbw,
                  algbw * 2 * (n - 1) / n, iters);
      std::fflush(stdout);
    }
  }
  return 0;
}

int pingpong_rank(int rank, int n, bool tcp, const std::string& rv, const std::vector<int64_t>& sizes) {
  ZmqJoin j;
  j.rank = rank;
  j.size = n;
  j.rendezvous = rv;
  j.data_scheme = tcp ? ZmqScheme::kTcp : ZmqScheme::kIpc;
  j.options.secret = "bench";
  auto world = make_zmq_world(j);
  const int peer = 1 - rank;
  for (int64_t bytes : sizes) {
    const Tensor x = Tensor::full({std::max<int64_t>(bytes / 4, 1)}, 1.0f);
    auto round = [&](Tag tag) {
      if (rank == 0) {
        world->send(peer, tag, x);
        BufferPool::global().release(world->recv(peer, tag, std::chrono::seconds(60)));
      } else {
        world->send(peer, tag, world->recv(peer, tag, std::chrono::seconds(60)));
      }
    };
    auto start = Clock::now();
    for (int i = 0; i < 20; ++i) round(1);
    // Rank 0 picks the round count for about 2 s and tells rank 1.
    const double probe = std::chrono::duration<double>(Clock::now() - start).count() / 20;
    Tensor count = Tensor::full({1}, static_cast<float>(std::clamp(static_cast<int>(2.0 / probe), 20, 20000)));
    if (rank == 0) world->send(peer, 4, count);
    else count = world->recv(peer, 4, std::chrono::seconds(60));
    const int iters = static_cast<int>(count.item());
    start = Clock::now();
    for (int i = 0; i < iters; ++i) round(2);
    if (rank == 0) {
      const double half = std::chrono::duration<double>(Clock::now() - start).count() / iters / 2;
      std::printf("zmq %s pingpong size=%8lld B half-rtt=%9.1f us bw=%.3f GB/s iters=%d\n", tcp ? "tcp" : "ipc",
                  static_cast<long long>(x.nbytes()), half * 1e6, x.nbytes() / half / 1e9, iters);
      std::fflush(stdout);
    }
  }
  return 0;
}

using RankMain = int (*)(int, int, bool, const std::string&, const std::vector<int64_t>&);

// Forks n processes running `rank_main` and waits for them; non-zero if any failed.
int run_processes(int n, bool tcp, const std::vector<int64_t>& sizes, RankMain rank_main) {
  const std::string rv = "ipc:///tmp/sf-zmq-bench-" + std::to_string(::getpid());
  std::vector<pid_t> kids;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int rc = 1;
      try {
        rc = rank_main(r, n, tcp, rv, sizes);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
      }
      std::fflush(stdout);
      std::_Exit(rc);
    }
    kids.push_back(pid);
  }
  int failed = 0;
  for (pid_t k : kids) {
    int st = 0;
    ::waitpid(k, &st, 0);
    failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  return failed ? 1 : 0;
}

int pingpong(int argc, char** argv) {
  const bool tcp = argc > 2 ? std::string(argv[2]) == "tcp" : true;
  return run_processes(2, tcp, parse_sizes(argc > 3 ? argv[3] : "4k,128k,1"), pingpong_rank);
}

int allreduce(int argc, char** argv) {
  const int n = argc > 2 ? std::atoi(argv[2]) : 2;
  const bool tcp = argc > 3 ? std::string(argv[3]) == "tcp" : true;
  return run_processes(n, tcp, parse_sizes(argc > 4 ? argv[4] : "1,4,16,64"), allreduce_rank);
}

void check(int rc, const char* what) {
  if (rc != 0) {
    std::fprintf(stderr, "%s: %s\n", what, zmq_strerror(zmq_errno()));
    std::exit(1);
  }
}

// One sender and one receiver process; the receiver prints the GB/s it saw.
void stream(bool curve, size_t bytes, int messages) {
  char server_public[41], server_secret[41], client_public[41], client_secret[41];
  check(zmq_curve_keypair(server_public, server_secret), "zmq_curve_keypair");
  check(zmq_curve_keypair(client_public, client_secret), "zmq_curve_keypair");
  int fds[2];
  if (::pipe(fds) != 0) std::exit(1);
  const pid_t receiver = ::fork();
  if (receiver == 0) {
    void* ctx = zmq_ctx_new();
    void* s = zmq_socket(ctx, ZMQ_ROUTER);
    const int on = 1, zero = 0;
    zmq_setsockopt(s, ZMQ_RCVHWM, &zero, sizeof zero);
    if (curve) {
      zmq_setsockopt(s, ZMQ_CURVE_SERVER, &on, sizeof on);
      zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, server_secret, 40);
    }
    check(zmq_bind(s, "tcp://127.0.0.1:*"), "bind");
    char ep[256];
    size_t len = sizeof ep;
    zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &len);
    if (::write(fds[1], ep, len) < 0) std::_Exit(1);
    std::vector<char> buf(bytes);
    Clock::time_point start;
    for (int i = 0; i <= messages; ++i) {  // message 0 only starts the clock
      zmq_msg_t id, m;
      zmq_msg_init(&id);
      zmq_msg_init(&m);
      zmq_msg_recv(&id, s, 0);
      zmq_msg_recv(&m, s, 0);
      std::memcpy(buf.data(), zmq_msg_data(&m), std::min(bytes, zmq_msg_size(&m)));
      zmq_msg_close(&id);
      zmq_msg_close(&m);
      if (i == 0) start = Clock::now();
    }
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("%s: %d x %zu MiB in %.1f ms: %.2f GB/s\n", curve ? "CURVE" : "NULL ", messages, bytes >> 20,
                secs * 1e3, static_cast<double>(bytes) * messages / secs / 1e9);
    std::fflush(stdout);
    zmq_close(s);
    zmq_ctx_term(ctx);
    std::_Exit(0);
  }
  char ep[256] = {};
  if (::read(fds[0], ep, sizeof ep - 1) <= 0) std::exit(1);
  const pid_t sender = ::fork();
  if (sender == 0) {
    void* ctx = zmq_ctx_new();
    void* s = zmq_socket(ctx, ZMQ_DEALER);
    const int zero = 0, linger = 10000;
    zmq_setsockopt(s, ZMQ_SNDHWM, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (curve) {
      zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, server_public, 40);
      zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, client_public, 40);
      zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, client_secret, 40);
    }
    check(zmq_connect(s, ep), "connect");
    std::vector<char> payload(bytes, 1);
    for (int i = 0; i <= messages; ++i) {
      zmq_msg_t m;
      zmq_msg_init_data(&m, payload.data(), bytes, nullptr, nullptr);  // zero-copy, as the transport
      zmq_msg_send(&m, s, 0);
    }
    zmq_close(s);
    zmq_ctx_term(ctx);
    std::_Exit(0);
  }
  int st = 0;
  ::waitpid(sender, &st, 0);
  ::waitpid(receiver, &st, 0);
}

int curve(int argc, char** argv) {
  const size_t mib = argc > 2 ? static_cast<size_t>(std::atoi(argv[2])) : 16;
  for (int rep = 0; rep < 2; ++rep) {
    stream(false, mib << 20, 20);
    stream(true, mib << 20, 20);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "allreduce") return allreduce(argc, argv);
  if (mode == "pingpong") return pingpong(argc, argv);
  if (mode == "curve") return curve(argc, argv);
  std::fprintf(stderr, "usage: %s allreduce [ranks] [tcp|ipc] [sizes] | pingpong [tcp|ipc] [sizes] | curve [MiB]\n",
               argv[0]);
  return 2;
}
