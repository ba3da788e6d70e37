// Options of the zmq backend (comm/zmq/transport.h): how a world's endpoints are addressed,
// how much data may be in flight per link, how fast a dead or frozen peer is noticed, and
// the per-job secret that every peer must prove it knows (docs/zmq_transport.md).
//
// Threading: plain values, copied into each endpoint when it is made.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace sf::comm {

enum class ZmqScheme : uint8_t {
  kIpc,  // ipc:// unix-domain sockets: ranks on one host
  kTcp,  // tcp:// : ranks on any hosts
};

struct ZmqOptions {
  // Where make_zmq_world(n, ...) binds its endpoints: ipc://<ipc_dir>/sf-zmq-... or
  // tcp://<host>:<ephemeral port> (host empty: 127.0.0.1). A joining rank (ZmqJoin) binds
  // its data endpoint on an ephemeral port of `host` (empty: the local IPv4 address that
  // routes to the rendezvous host), or at a fresh path in ipc_dir.
  ZmqScheme scheme = ZmqScheme::kIpc;
  std::string host{};  // {}: designated initializers may leave it out
  std::string ipc_dir = "/tmp";
  // The job secret a peer must prove it knows (a challenge-response on every connection,
  // comm/zmq/handshake.h). make_zmq_world(n, ...) draws a random one when empty; a joining
  // rank must be given it (every rank of the job the same).
  std::string secret{};
  // The secret of the job's first world, which a replacement rank proves at the door of a later
  // world (comm/zmq/door.h); empty: `secret`. Later worlds' secrets derive from it.
  std::string job_secret{};
  // Payloads above this are refused on receipt (counted, never allocated).
  uint64_t max_payload_bytes = uint64_t{1} << 32;
  // ZMTP heartbeats on every outgoing link: a peer that does not answer within
  // heartbeat_timeout (frozen, or its host gone) is lost. A killed peer's sockets close at
  // once and need no heartbeat.
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds heartbeat_timeout{10000};
  // How long world creation waits for every link to come up (and, joining, for every rank to
  // reach the rendezvous) before failing with an error naming the ranks that did not. A rank
  // gives up after this time, not later: nothing it queued holds its close.
  // SF_ZMQ_CONNECT_TIMEOUT_MS (100 .. 3600000) overrides it.
  std::chrono::milliseconds connect_timeout{60000};
  // How long closing an endpoint waits for queued bytes to leave.
  std::chrono::milliseconds linger{2000};
  // Message size, in bytes, that the ring and tree algorithms cut large tensors into on this
  // transport (Transport::segment_bytes; every rank of a world must use the same). Fewer,
  // larger messages suit a transport whose cost is per message; the default was chosen by
  // measurement (docs/zmq_transport.md, "Segment size"). SF_ZMQ_SEGMENT_KB overrides it.
  int64_t segment_bytes = int64_t{1} << 20;
  // SO_SNDBUF / SO_RCVBUF of the data lanes in bytes; 0 leaves them to the kernel's autotuning,
  // which measured best (docs/zmq_transport.md, "Socket buffers"). SF_ZMQ_SOCKET_BUFFER_KB
  // overrides it.
  int socket_buffer_bytes = 0;
};

// One process's part in a multi-process zmq job (make_zmq_world(ZmqJoin)).
struct ZmqJoin {
  int rank = -1;
  int size = 0;
  // Rank 0 binds it, the others connect: "tcp://10.0.0.1:29500" or "ipc:///tmp/job.sock".
  std::string rendezvous;
  // Data endpoints use the rendezvous's scheme unless this says otherwise.
  std::optional<ZmqScheme> data_scheme;
  ZmqOptions options;  // options.secret is the job secret and must be set
};

}  // namespace sf::comm
