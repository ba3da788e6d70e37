#include <shardflow/comm/zmq/rendezvous.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <unordered_map>

#include <shardflow/comm/zmq/control.h>
#include <shardflow/comm/zmq/header.h>
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::comm::zmq {

namespace {

using Clock = std::chrono::steady_clock;

void log(const ZmqJoin& join, const std::string& what) {
  std::fprintf(stderr, "shardflow zmq: rank %d (rendezvous %s): %s\n", join.rank, join.rendezvous.c_str(),
               what.c_str());
  std::fflush(stderr);
}

std::vector<std::string> serve(Context& ctx, const JobKey& key, const ZmqJoin& join, const std::string& mine,
                               Clock::time_point deadline) {
  const int n = join.size;
  Socket s(ctx, ZMQ_ROUTER);
  s.set(ZMQ_LINGER, static_cast<int>(join.options.connect_timeout.count()));
  s.set(ZMQ_ROUTER_MANDATORY, 1);
  const int64_t max_frame = 1 << 20;
  zmq_setsockopt(s.get(), ZMQ_MAXMSGSIZE, &max_frame, sizeof max_frame);
  s.bind(join.rendezvous);
  struct RemoveIpcFile {  // libzmq 4.3 leaves the file of an ipc endpoint behind
    std::string path;
    ~RemoveIpcFile() {
      if (path.rfind("ipc://", 0) == 0) ::unlink(path.c_str() + 6);
    }
  } remove_ipc_file{join.rendezvous};
  struct Conn {
    std::unique_ptr<ServerHandshake> hs;
    int rank = -1;
    bool refused = false;
  };
  std::unordered_map<std::string, Conn> conns;
  std::vector<std::string> eps(n), rids(n);
  eps[0] = mine;
  int joined = 1;
  const HeaderLimits limits{n, 0};
  std::vector<Message> parts;
  while (joined < n) {
    if (!wait_readable(s, deadline, "zmq rendezvous")) {
      s.set(ZMQ_LINGER, 0);  // see ask(): a failed rendezvous must not wait a second time
      std::vector<int> missing;
      for (int r = 1; r < n; ++r)
        if (rids[r].empty()) missing.push_back(r);
      SF_THROW(Error, "zmq rendezvous at {}: rank(s) {} did not join within {} ms", join.rendezvous,
               brief_list(missing), join.options.connect_timeout.count());
    }
    while (size_t count = recv_parts(s, parts, 2)) {
      const std::string rid(reinterpret_cast<const char*>(parts[0].data()), parts[0].size());
      Conn& c = conns[rid];
      if (c.refused) continue;
      // The routing id is made here and carries no metadata; the peer's first frame does.
      const std::string who = count >= 2 ? parts[1].peer_description() : "an unknown address";
      auto refuse = [&](const std::string& why) {
        c.refused = true;
        log(join, fmt::format("refused a connection from {}: {}", who, why));
      };
      if (count != 2) {
        refuse("wrong number of frames");
        continue;
      }
      Header h;
      try {
        h = decode_header(parts[1].data(), parts[1].size(), limits);
      } catch (const MalformedFrame& e) {
        refuse(e.what());
        continue;
      }
      if (c.rank < 0) {
        if (h.kind == Kind::kHello && !c.hs) {
          c.hs = std::make_unique<ServerHandshake>(key, Purpose::kRendezvous, 0);
          send_header(s, c.hs->challenge(h), &rid);
        } else if (h.kind == Kind::kProof && c.hs && c.hs->accept(h)) {
          c.rank = c.hs->client_rank();
        } else {
          refuse(fmt::format("a {} message that does not prove the job secret", static_cast<int>(h.kind)));
        }
        continue;
      }
      if (h.kind != Kind::kJoin || h.from != c.rank) {
        refuse("expected a join");
        continue;
      }
      SF_ENFORCE(h.size == n, InvalidArgument,
                 "zmq rendezvous at {}: rank {} was started with a world of {}, rank 0 with {}", join.rendezvous,
                 c.rank, h.size, n);
      if (c.rank == 0 || !rids[c.rank].empty()) {
        refuse(fmt::format("rank {} has already joined", c.rank));
        continue;
      }
      eps[c.rank] = h.endpoints[0];
      rids[c.rank] = rid;
      ++joined;
    }
  }
  Header table;
  table.kind = Kind::kTable;
  table.from = 0;
  table.endpoints = eps;
  for (int r = 1; r < n; ++r) send_header(s, table, &rids[r]);
  return eps;  // closing s lets the tables leave within its linger
}

std::vector<std::string> ask(Context& ctx, const JobKey& key, const ZmqJoin& join, const std::string& mine,
                             Clock::time_point deadline) {
  Socket s(ctx, ZMQ_DEALER);
  s.set(ZMQ_LINGER, static_cast<int>(join.options.connect_timeout.count()));
  s.connect(join.rendezvous);  // rank 0 may not be there yet: libzmq retries
  ClientHandshake hs(key, Purpose::kRendezvous, join.rank, 0);
  send_header(s, hs.hello(), nullptr);
  const HeaderLimits limits{join.size, 0};
  std::vector<Message> parts;
  bool proven = false;
  for (;;) {
    if (!wait_readable(s, deadline, "zmq rendezvous")) {
      // The hello still queued for an absent rank 0 would hold the context's close for the
      // whole linger (connect_timeout): the rank would give up after twice the time its
      // message states. Nothing queued matters once we give up.
      s.set(ZMQ_LINGER, 0);
      SF_THROW(Error,
               "zmq rank {}: the rendezvous at {} did not {} within {} ms (is rank 0 running, with the same secret "
               "and world size?)",
               join.rank, join.rendezvous, proven ? "send the endpoint table" : "answer",
               join.options.connect_timeout.count());
    }
    while (size_t count = recv_parts(s, parts, 1)) {
      if (count != 1) continue;
      Header h;
      try {
        h = decode_header(parts[0].data(), parts[0].size(), limits);
      } catch (const MalformedFrame& e) {
        log(join, fmt::format("ignored a message from the rendezvous: {}", e.what()));
        continue;
      }
      if (!proven && h.kind == Kind::kChallenge) {
        Header proof = hs.answer(h);  // throws if rank 0 does not hold the secret
        Header j;
        j.kind = Kind::kJoin;
        j.from = join.rank;
        j.size = join.size;
        j.endpoints = {mine};
        send_header(s, proof, nullptr);
        send_header(s, j, nullptr);
        proven = true;
      } else if (proven && h.kind == Kind::kTable && h.from == 0) {
        SF_ENFORCE(h.endpoints[join.rank] == mine, Error, "zmq rank {}: the rendezvous table lists {} for it, not {}",
                   join.rank, h.endpoints[join.rank], mine);
        return h.endpoints;
      }
    }
  }
}

}  // namespace

std::vector<std::string> exchange_endpoints(Context& ctx, const JobKey& key, const ZmqJoin& join,
                                            const std::string& mine, Clock::time_point deadline) {
  if (join.size == 1) return {mine};
  return join.rank == 0 ? serve(ctx, key, join, mine, deadline) : ask(ctx, key, join, mine, deadline);
}

std::string local_address_toward(const std::string& host) {
  if (host == "localhost" || host.rfind("127.", 0) == 0) return "127.0.0.1";
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), "9", &hints, &res);
  SF_ENFORCE(rc == 0 && res, Error, "zmq: cannot resolve rendezvous host '{}': {}", host, gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> hold(res, freeaddrinfo);
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  SF_ENFORCE(fd >= 0, Error, "zmq: socket() failed while finding the local address toward {}", host);
  sockaddr_in local{};
  socklen_t len = sizeof local;
  // A UDP connect sends nothing; it only makes the kernel pick the route and source address.
  const bool ok = ::connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  ::close(fd);
  SF_ENFORCE(ok, Error, "zmq: no route to rendezvous host '{}'", host);
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &local.sin_addr, buf, sizeof buf);
  return buf;
}

}  // namespace sf::comm::zmq
