// Engine: the I/O thread of a zmq Fabric (comm/zmq/fabric.h) and everything it owns — the
// DEALER, monitor and handshake of each link, the ROUTER side's connections, the lane
// listener and the incoming lanes. A private header: only fabric.cc, engine.cc (the loop and
// the links), engine_receive.cc (what arrives on the ROUTER) and engine_lanes.cc (setting up
// and reading lanes) include it.
//
// Threading: only the I/O thread touches an Engine; it reaches the Fabric's shared state
// (outbox, inboxes, link flags, counters) through the Fabric's own locks and atomics.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <shardflow/comm/zmq/fabric.h>
#include <shardflow/comm/zmq/header.h>

namespace sf::comm::zmq {

struct Fabric::Counters {
  std::atomic<uint64_t> refused_peers{0}, unauthenticated{0}, bad_frame_count{0}, bad_header{0}, bad_byte_count{0},
      oversized{0}, bad_sender{0}, messages_sent{0}, messages_received{0}, bytes_sent{0}, bytes_received{0},
      deferred_sends{0}, peers_lost{0};

  void count(Defect d) {
    switch (d) {
      case Defect::kFrameCount: ++bad_frame_count; break;
      case Defect::kHeader: ++bad_header; break;
      case Defect::kByteCount: ++bad_byte_count; break;
      case Defect::kOversized: ++oversized; break;
      case Defect::kSender: ++bad_sender; break;
    }
  }
};

// A header as one frame.
inline Message header_frame(const Header& h) {
  const std::vector<uint8_t> bytes = encode_header(h);
  return Message(bytes.data(), bytes.size());
}

class Fabric::Engine {
 public:
  using Clock = std::chrono::steady_clock;

  Engine(Fabric& f, std::vector<std::string> endpoints);
  // Works until shutdown has been requested and the queues are sent (or the linger is over).
  void loop();
  // Closes every socket (their linger lets queued bytes leave during zmq_ctx_term).
  void finish();

 private:
  struct Link {  // this rank's view of one peer
    Socket dealer, monitor;
    std::string endpoint;
    std::unique_ptr<ClientHandshake> hs;
    bool out_up = false;  // our proof is sent: the peer may offer us its lane
    bool gone = false;    // closed or lost: sends to it are dropped
    std::optional<Clock::time_point> lost_at;  // connection dropped; lost then unless it closed
    std::string rid;  // routing id of its proven connection to our ROUTER
    int dealer_fd = -1, monitor_fd = -1;          // their ZMQ_FDs, for poll()
    bool dealer_pending = true, monitor_pending = true;  // not known to be drained (see loop())
  };
  // A connection to the lane listener that has not sent its whole greeting yet.
  struct Greeting {
    int fd;
    std::string address;
    Clock::time_point since;
    std::array<uint8_t, kLaneGreetingBytes> bytes{};
    size_t got = 0;
  };
  // Greetings waiting at once before the oldest is refused.
  static constexpr size_t kMaxGreetings = 64;

  // Connections the ROUTER keeps state for before forgetting the refused ones.
  static constexpr size_t kMaxConnections = 4096;
  struct Inbound {  // one connection to our ROUTER, by routing id
    std::unique_ptr<ServerHandshake> hs;
    int rank = -1;  // >= 0 once proven
    bool refused = false;
  };

  void setup_link(int p);
  void take_requests();
  // Each drains its socket and returns false if it stopped early (more may be waiting).
  bool on_router();
  void on_router_message(size_t count);
  void on_unproven(Inbound& in, const std::string& rid, const Header& h);
  bool on_dealer(int p);
  bool on_monitor(int p);
  void refuse(Inbound& in, const std::string& why);
  void forget_refused();
  // Lanes (engine_lanes.cc).
  void offer_lane(int p);
  void open_lane(int p, const Header& offer);
  void on_listener();
  void on_greeting(size_t i);
  void refuse_greeting(size_t i, const std::string& why);
  void expire_greetings(Clock::time_point now);
  void on_lane(int p);
  // Drops the link: `lost` (no close notice) counts it and says so in receivers' errors.
  void drop_link(int p, bool lost, const std::string& why);
  bool flushed() const;
  std::string address_of(const Message& m) const;
  void log(const std::string& what) const;

  Fabric& f_;
  Counters& c_;
  HeaderLimits limits_;
  std::vector<std::unique_ptr<Link>> links_;  // by rank; null for this rank
  std::unordered_map<std::string, Inbound> inbound_;
  std::vector<Greeting> greetings_;
  std::vector<Message> parts_;
  int router_fd_ = -1;
  bool router_pending_ = true;
  bool shutdown_seen_ = false;
  Clock::time_point linger_end_{};
};

}  // namespace sf::comm::zmq
