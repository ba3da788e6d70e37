#include <shardflow/comm/zmq/transport.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include <shardflow/comm/zmq/door.h>
#include <shardflow/comm/zmq/fabric.h>
#include <shardflow/comm/zmq/rendezvous.h>
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::comm::zmq {

ZmqTransport::~ZmqTransport() = default;

int ZmqTransport::rank() const { return fabric_->rank(); }
int ZmqTransport::size() const { return fabric_->size(); }
void ZmqTransport::close() { fabric_->close(); }
const std::string& ZmqTransport::endpoint() const { return fabric_->endpoint(); }
const std::string& ZmqTransport::lane_endpoint() const { return fabric_->lane_endpoint(); }
ZmqStats ZmqTransport::stats() const { return fabric_->stats(); }

void ZmqTransport::check_peer(int peer, const char* what) const {
  SF_ENFORCE(peer >= 0 && peer < size(), InvalidArgument, "zmq {}: peer rank {} outside a world of {}", what, peer,
             size());
}

void ZmqTransport::send(int peer, Tag tag, const Tensor& t) {
  check_peer(peer, "send");
  SF_ENFORCE(t.nbytes() <= max_payload_bytes_, InvalidArgument,
             "zmq send to rank {}: {} is {} bytes, over max_payload_bytes {}", peer, t.describe(), t.nbytes(),
             max_payload_bytes_);
  fabric_->post(peer, tag, t);
}

Tensor ZmqTransport::recv(int peer, Tag tag, std::chrono::milliseconds timeout) {
  check_peer(peer, "recv");
  return fabric_->take(peer, tag, timeout);
}

std::optional<Tensor> ZmqTransport::poll_recv(int peer, Tag tag, std::chrono::milliseconds wait) {
  check_peer(peer, "recv");
  return fabric_->poll(peer, tag, wait);
}

namespace {

using Clock = std::chrono::steady_clock;

// A fresh ipc path: pid, a process-wide counter and random digits keep concurrent worlds and
// test processes apart.
std::string ipc_endpoint(const std::string& dir, int rank) {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("ipc://{}/sf-zmq-{}-{}-r{}-{}", dir, ::getpid(), counter++, rank, random_secret().substr(0, 8));
}

std::shared_ptr<Transport> wrap(std::unique_ptr<Fabric> f, const ZmqOptions& o) {
  return std::make_shared<ZmqTransport>(std::move(f), o);
}

[[noreturn]] void fail_links(int rank, const std::vector<int>& missing, const ZmqOptions& o) {
  SF_THROW(Error, "zmq: rank {} could not link with rank(s) {} within {} ms (lost, or never answered the handshake)",
           rank, brief_list(missing), o.connect_timeout.count());
}

std::string getenv_or_throw(const char* name) {
  const char* v = std::getenv(name);
  SF_ENFORCE(v && *v, InvalidArgument, "zmq: environment variable {} is not set", name);
  return v;
}

int parse_int(const char* name, const std::string& v) {
  try {
    size_t used = 0;
    const int x = std::stoi(v, &used);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  SF_THROW(InvalidArgument, "zmq: {}='{}' is not an integer", name, v);
}

// `o` with SF_ZMQ_SEGMENT_KB and SF_ZMQ_SOCKET_BUFFER_KB applied where set, checked.
ZmqOptions with_env(ZmqOptions o) {
  auto kib = [](const char* name, int64_t fallback) {
    const char* v = std::getenv(name);
    return v && *v ? int64_t{parse_int(name, v)} * 1024 : fallback;
  };
  const int64_t segment = kib("SF_ZMQ_SEGMENT_KB", o.segment_bytes);
  const int64_t buffer = kib("SF_ZMQ_SOCKET_BUFFER_KB", o.socket_buffer_bytes);
  SF_ENFORCE(segment >= (int64_t{4} << 10) && segment <= (int64_t{64} << 20), InvalidArgument,
             "zmq: segment size {} bytes (segment_bytes, SF_ZMQ_SEGMENT_KB) is outside 4 KiB .. 64 MiB", segment);
  SF_ENFORCE(buffer >= 0 && buffer <= (int64_t{1} << 30), InvalidArgument,
             "zmq: socket buffer {} bytes (socket_buffer_bytes, SF_ZMQ_SOCKET_BUFFER_KB) is outside 0 .. 1 GiB", buffer);
  o.segment_bytes = segment;
  o.socket_buffer_bytes = static_cast<int>(buffer);
  // A frozen rank is lost after this: elastic jobs (docs/elastic.md) trade it against a slow
  // rank's pauses.
  if (const char* v = std::getenv("SF_ZMQ_HEARTBEAT_TIMEOUT_MS"); v && *v) {
    const int ms = parse_int("SF_ZMQ_HEARTBEAT_TIMEOUT_MS", v);
    SF_ENFORCE(ms >= 200 && ms <= 3600000, InvalidArgument,
               "zmq: SF_ZMQ_HEARTBEAT_TIMEOUT_MS={} is outside 200 .. 3600000 (1 hour)", ms);
    o.heartbeat_timeout = std::chrono::milliseconds(ms);
    o.heartbeat_interval = std::min(o.heartbeat_interval, std::chrono::milliseconds(ms / 4));
  }
  if (const char* v = std::getenv("SF_ZMQ_CONNECT_TIMEOUT_MS"); v && *v) {
    const int ms = parse_int("SF_ZMQ_CONNECT_TIMEOUT_MS", v);
    SF_ENFORCE(ms >= 100 && ms <= 3600000, InvalidArgument,
               "zmq: SF_ZMQ_CONNECT_TIMEOUT_MS={} is outside 100 .. 3600000 (1 hour)", ms);
    o.connect_timeout = std::chrono::milliseconds(ms);
  }
  return o;
}

}  // namespace

ZmqTransport::ZmqTransport(std::unique_ptr<Fabric> fabric, const ZmqOptions& opts)
    : fabric_(std::move(fabric)),
      options_(opts),
      max_payload_bytes_(opts.max_payload_bytes),
      segment_bytes_(opts.segment_bytes) {}

std::vector<int> ZmqTransport::lost_peers() const { return fabric_->lost_peers(); }
std::vector<int> ZmqTransport::closed_peers() const { return fabric_->closed_peers(); }
void ZmqTransport::interrupt(int lost, const std::string& why) { fabric_->interrupt(lost, why); }
void ZmqTransport::clear_interrupt() { fabric_->clear_interrupt(); }

namespace {

// A next world's endpoint: its fabric bound, started by link().
class ZmqWorldSeed final : public WorldSeed {
 public:
  ZmqWorldSeed(std::unique_ptr<Fabric> fabric, ZmqOptions o) : fabric_(std::move(fabric)), options_(std::move(o)) {}
  const std::string& address() const override { return fabric_->endpoint(); }
  std::shared_ptr<Transport> link(const std::vector<std::string>& addresses,
                                  std::chrono::milliseconds timeout) override {
    SF_ENFORCE(fabric_, InvalidArgument, "zmq: a next world's endpoint was linked twice");
    fabric_->start(addresses);
    const std::vector<int> missing = fabric_->wait_linked(std::chrono::steady_clock::now() + timeout);
    if (!missing.empty())
      SF_THROW(Error, "zmq: rank {} of the new world could not link with rank(s) {} within {} ms", fabric_->rank(),
               brief_list(missing), timeout.count());
    return wrap(std::move(fabric_), options_);
  }

 private:
  std::unique_ptr<Fabric> fabric_;
  ZmqOptions options_;
};

}  // namespace

std::unique_ptr<WorldSeed> ZmqTransport::seed_next_world(int rank, int size, uint32_t generation) {
  ZmqOptions o = options_;
  if (o.job_secret.empty()) o.job_secret = o.secret;
  o.secret = fmt::format("{}/generation-{}", options_.secret, generation);
  const std::string& here = fabric_->endpoint();
  std::string bind_to;
  if (here.rfind("ipc://", 0) == 0) {
    bind_to = ipc_endpoint(o.ipc_dir, rank);
  } else {
    bind_to = here.substr(0, here.rfind(':')) + ":*";  // tcp://<the same address>:<a new port>
  }
  return std::make_unique<ZmqWorldSeed>(std::make_unique<Fabric>(rank, size, bind_to, o), o);
}

std::unique_ptr<JoinDoor> ZmqTransport::open_door() {
  const std::string& here = fabric_->endpoint();
  const std::string bind_to = here.rfind("ipc://", 0) == 0 ? ipc_endpoint(options_.ipc_dir, rank()) + ".door"
                                                           : here.substr(0, here.rfind(':')) + ":*";
  return open_zmq_door(bind_to, options_.job_secret.empty() ? options_.secret : options_.job_secret);
}

}  // namespace sf::comm::zmq

namespace sf::comm {

using zmq::Fabric;
using Clock = std::chrono::steady_clock;

std::vector<std::shared_ptr<Transport>> make_zmq_world(int n, const ZmqOptions& options) {
  SF_ENFORCE(n >= 1, InvalidArgument, "zmq: world size {} must be at least 1", n);
  ZmqOptions o = zmq::with_env(options);  // bad settings are refused before any socket opens
  if (o.secret.empty()) o.secret = zmq::random_secret();
  std::vector<std::unique_ptr<Fabric>> fabrics;
  std::vector<std::string> endpoints;
  for (int r = 0; r < n; ++r) {
    const std::string bind_to = o.scheme == ZmqScheme::kIpc
                                    ? zmq::ipc_endpoint(o.ipc_dir, r)
                                    : fmt::format("tcp://{}:*", o.host.empty() ? "127.0.0.1" : o.host);
    fabrics.push_back(std::make_unique<Fabric>(r, n, bind_to, o));
    endpoints.push_back(fabrics.back()->endpoint());
  }
  for (auto& f : fabrics) f->start(endpoints);
  const auto deadline = Clock::now() + o.connect_timeout;
  for (auto& f : fabrics) {
    const std::vector<int> missing = f->wait_linked(deadline);
    if (!missing.empty()) zmq::fail_links(f->rank(), missing, o);
  }
  std::vector<std::shared_ptr<Transport>> world;
  for (auto& f : fabrics) world.push_back(zmq::wrap(std::move(f), o));
  return world;
}

std::shared_ptr<Transport> make_zmq_world(const ZmqJoin& join) {
  SF_ENFORCE(join.size >= 1 && join.rank >= 0 && join.rank < join.size, InvalidArgument,
             "zmq join: rank {} outside a world of {}", join.rank, join.size);
  const std::string& rv = join.rendezvous;
  const bool ipc = rv.rfind("ipc://", 0) == 0, tcp = rv.rfind("tcp://", 0) == 0;
  SF_ENFORCE(ipc || tcp, InvalidArgument, "zmq join: rendezvous '{}' is neither tcp://host:port nor ipc://path", rv);
  ZmqJoin checked = join;
  checked.options = zmq::with_env(join.options);  // bad settings are refused before the rendezvous
  const ZmqOptions& o = checked.options;
  const auto deadline = Clock::now() + o.connect_timeout;
  const ZmqScheme scheme = join.data_scheme.value_or(ipc ? ZmqScheme::kIpc : ZmqScheme::kTcp);
  std::string bind_to;
  if (scheme == ZmqScheme::kIpc) {
    bind_to = zmq::ipc_endpoint(o.ipc_dir, join.rank);
  } else {
    std::string host = o.host;
    if (host.empty()) host = tcp ? zmq::local_address_toward(rv.substr(6, rv.rfind(':') - 6)) : "127.0.0.1";
    bind_to = fmt::format("tcp://{}:*", host);
  }
  auto fabric = std::make_unique<Fabric>(join.rank, join.size, bind_to, o);  // checks the secret
  const zmq::JobKey key(o.secret);
  const std::vector<std::string> endpoints = zmq::exchange_endpoints(fabric->context(), key, checked, fabric->endpoint(),
                                                                     deadline);
  fabric->start(endpoints);
  const std::vector<int> missing = fabric->wait_linked(deadline);
  if (!missing.empty()) zmq::fail_links(join.rank, missing, o);
  return zmq::wrap(std::move(fabric), o);
}

std::shared_ptr<Transport> join_zmq_world(const std::string& door, int label, const ZmqOptions& options,
                                          std::chrono::milliseconds wait) {
  const bool ipc = door.rfind("ipc://", 0) == 0, tcp = door.rfind("tcp://", 0) == 0;
  SF_ENFORCE(ipc || tcp, InvalidArgument, "elastic: the door '{}' is neither tcp://host:port nor ipc://path",
             brief_text(door, 200));
  ZmqOptions o = zmq::with_env(options);
  SF_ENFORCE(!o.secret.empty(), InvalidArgument, "elastic: a joining rank needs the job secret (SF_JOB_SECRET)");
  o.job_secret = o.secret;
  zmq::DoorClient client(door, o.job_secret, label);
  const zmq::DoorAdmission a = client.wait_admission(Clock::now() + wait);
  // The secret of the world it joins: the job's, with each generation's appended as
  // ZmqTransport::seed_next_world does.
  for (uint32_t g = 1; g <= a.generation; ++g) o.secret = fmt::format("{}/generation-{}", o.secret, g);
  std::string bind_to;
  if (ipc) {
    bind_to = zmq::ipc_endpoint(o.ipc_dir, a.rank);
  } else {
    const std::string host = o.host.empty() ? zmq::local_address_toward(door.substr(6, door.rfind(':') - 6)) : o.host;
    bind_to = fmt::format("tcp://{}:*", host);
  }
  auto fabric = std::make_unique<Fabric>(a.rank, a.size, bind_to, o);
  client.answer(fabric->endpoint());
  std::vector<std::string> addresses = a.addresses;
  addresses[static_cast<size_t>(a.rank)] = fabric->endpoint();
  fabric->start(addresses);
  const std::vector<int> missing = fabric->wait_linked(Clock::now() + o.connect_timeout);
  if (!missing.empty()) zmq::fail_links(a.rank, missing, o);
  auto t = std::make_shared<zmq::ZmqTransport>(std::move(fabric), o);
  t->set_admission(Admission{a.generation, a.labels, Clock::now()});
  return t;
}

ZmqJoin zmq_join_from_env() {
  ZmqJoin j;
  j.rank = zmq::parse_int("SF_RANK", zmq::getenv_or_throw("SF_RANK"));
  j.size = zmq::parse_int("SF_WORLD_SIZE", zmq::getenv_or_throw("SF_WORLD_SIZE"));
  j.rendezvous = zmq::getenv_or_throw("SF_RENDEZVOUS");
  j.options.secret = zmq::getenv_or_throw("SF_JOB_SECRET");
  return j;
}

}  // namespace sf::comm
