// ZmqTransport: one rank's endpoint of the zmq backend — tcp:// between hosts, ipc:// on one
// host, each message a msgpack header frame plus the tensor's raw bytes sent zero-copy, every
// connection proven with the job secret, credit-based flow control, and lost peers detected
// by connection loss and heartbeats (comm/zmq/fabric.h, docs/zmq_transport.md). Tensors are
// copied onto the wire; see the buffer ownership contract in comm/transport.h.
//
// Two ways to make a world:
//  * make_zmq_world(n, options): n endpoints in this process on real sockets (ipc:// or
//    tcp://127.0.0.1 with ephemeral ports), for tests and single-host runs;
//  * make_zmq_world(join): this process's rank of a multi-process job. Rank 0 binds the
//    rendezvous address; every rank binds its own data endpoint on an ephemeral port or a
//    fresh ipc path, reports it, and receives every rank's (comm/zmq/rendezvous.h).
// Both return once every link is up both ways, or throw Error naming the ranks that did not
// show up within options.connect_timeout.
//
// Threading: as Transport. All socket work happens on the endpoint's own I/O thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <shardflow/comm/transport.h>
#include <shardflow/comm/zmq/options.h>
#include <shardflow/comm/zmq/stats.h>

namespace sf::comm::zmq {

class Fabric;  // comm/zmq/fabric.h: kept out of this header, so users do not include libzmq

class ZmqTransport final : public Transport {
 public:
  // Takes max_payload_bytes and segment_bytes from `opts` (the environment already applied).
  ZmqTransport(std::unique_ptr<Fabric> fabric, const ZmqOptions& opts);
  ~ZmqTransport() override;

  int rank() const override;
  int size() const override;
  std::string_view name() const override { return "zmq"; }
  // Also throws InvalidArgument for a tensor over ZmqOptions::max_payload_bytes, which every
  // receiver would refuse.
  void send(int peer, Tag tag, const Tensor& t) override;
  Tensor recv(int peer, Tag tag, std::chrono::milliseconds timeout) override;
  std::optional<Tensor> poll_recv(int peer, Tag tag, std::chrono::milliseconds wait) override;
  void close() override;
  int64_t segment_bytes() const override { return segment_bytes_; }
  std::vector<int> lost_peers() const override;
  std::vector<int> closed_peers() const override;
  std::chrono::milliseconds loss_bound() const override { return options_.heartbeat_timeout; }
  void interrupt(int lost, const std::string& why) override;
  void clear_interrupt() override;
  // Binds on this endpoint's scheme and host (a fresh ipc path, or the same address on a new
  // port); the new world's secret is this one's with the generation appended.
  std::unique_ptr<WorldSeed> seed_next_world(int rank, int size, uint32_t generation) override;
  // A door on this endpoint's scheme and host (comm/zmq/door.h), proven with the job secret.
  std::unique_ptr<JoinDoor> open_door() override;
  const Admission* admission() const override { return admission_ ? &*admission_ : nullptr; }
  // Records how this rank joined a running job (join_zmq_world).
  void set_admission(Admission a) { admission_ = std::move(a); }

  // The address peers connect to ("tcp://127.0.0.1:41234", "ipc:///tmp/...").
  const std::string& endpoint() const;
  // Where peers open their data lanes to this rank ("tcp://127.0.0.1:41235", "ipc://....lane").
  const std::string& lane_endpoint() const;
  ZmqStats stats() const;

 private:
  void check_peer(int peer, const char* what) const;

  std::unique_ptr<Fabric> fabric_;
  ZmqOptions options_;
  std::optional<Admission> admission_;
  uint64_t max_payload_bytes_;
  int64_t segment_bytes_;
};

}  // namespace sf::comm::zmq

namespace sf::comm {

// n endpoints in this process (element r is rank r's), linked to each other over real
// sockets; options.secret defaults to a random one.
std::vector<std::shared_ptr<Transport>> make_zmq_world(int n, const ZmqOptions& options = {});

// This process's endpoint of a multi-process job: every rank calls it with the same size,
// rendezvous and secret. Throws InvalidArgument for bad arguments, Error naming the missing
// ranks when the rendezvous or the links do not complete within options.connect_timeout.
std::shared_ptr<Transport> make_zmq_world(const ZmqJoin& join);

// A replacement rank's endpoint in a running elastic job: asks at `door` (a world's JoinDoor)
// as `label` (its launcher rank number), proving options.secret (the job secret), waits until
// the members admit it — at their next agreement (comm/membership.h) — then links with them.
// Its admission() says which world it joined. Throws Error when the door refuses it (the job
// ended, or its world changed first) or `wait` passes first.
std::shared_ptr<Transport> join_zmq_world(const std::string& door, int label, const ZmqOptions& options,
                                          std::chrono::milliseconds wait);

// A ZmqJoin from the launcher's environment: SF_RANK, SF_WORLD_SIZE, SF_RENDEZVOUS and
// SF_JOB_SECRET (all required; InvalidArgument naming the one missing or malformed).
ZmqJoin zmq_join_from_env();

}  // namespace sf::comm
