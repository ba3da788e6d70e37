// Engine: the I/O thread of a zmq Fabric (comm/zmq/fabric.h) and everything it owns — the
// DEALER, monitor and handshake of each link, the ROUTER side's connections, credit, and the
// outgoing queues. A private header: only fabric.cc, engine.cc (the loop, links and sending)
// and engine_receive.cc (what arrives on the ROUTER) include it.
//
// Threading: only the I/O thread touches an Engine; it reaches the Fabric's shared state
// (outbox, inboxes, link flags, counters) through the Fabric's own locks and atomics.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "comm/zmq/credit.h"
#include "comm/zmq/fabric.h"
#include "comm/zmq/header.h"

namespace sf::comm::zmq {

struct Fabric::Counters {
  std::atomic<uint64_t> refused_peers{0}, unauthenticated{0}, bad_frame_count{0}, bad_header{0}, bad_byte_count{0},
      oversized{0}, bad_sender{0}, messages_sent{0}, messages_received{0}, bytes_sent{0}, bytes_received{0},
      credit_waits{0}, peers_lost{0};

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
    bool out_up = false;  // our proof is sent: data may follow on the DEALER
    bool gone = false;    // closed or lost: sends to it are dropped
    std::optional<Clock::time_point> lost_at;  // connection dropped; lost then unless it closed
    std::deque<Outgoing> queue;                // waiting for the link or for credit
    bool waiting_credit = false;
    CreditWindow window;
    CreditReturn returns;
    std::string rid;  // routing id of its proven connection to our ROUTER
    int dealer_fd = -1, monitor_fd = -1;          // their ZMQ_FDs, for poll()
    bool dealer_pending = true, monitor_pending = true;  // not known to be drained (see loop())
    explicit Link(uint64_t credit) : window(credit), returns(credit) {}
  };
  // Connections the ROUTER keeps state for before forgetting the refused ones.
  static constexpr size_t kMaxConnections = 4096;
  struct Inbound {  // one connection to our ROUTER, by routing id
    std::unique_ptr<ServerHandshake> hs;
    int rank = -1;  // >= 0 once proven
    bool refused = false;
  };

  void setup_link(int p);
  void take_requests();
  void begin_close();
  // Each drains its socket and returns false if it stopped early (more may be waiting).
  bool on_router();
  void on_router_message(size_t count);
  void on_unproven(Inbound& in, const std::string& rid, const Header& h);
  bool on_dealer(int p);
  bool on_monitor(int p);
  void pump(int p);
  void grant(int p, uint64_t cost);
  void refuse(Inbound& in, const std::string& why);
  void forget_refused();
  void deliver_data(int p, const Header& h, const Message& payload);
  // Drops the link: `lost` (no close notice) counts it and says so in receivers' errors.
  void drop_link(int p, bool lost, const std::string& why);
  void release_queue(Link& l);
  bool flushed() const;
  std::string address_of(const Message& m) const;
  void log(const std::string& what) const;

  Fabric& f_;
  Counters& c_;
  HeaderLimits limits_;
  std::vector<std::unique_ptr<Link>> links_;  // by rank; null for this rank
  std::unordered_map<std::string, Inbound> inbound_;
  std::vector<Message> parts_;
  int router_fd_ = -1;
  bool router_pending_ = true;
  bool closing_ = false;
  bool shutdown_seen_ = false;
  Clock::time_point linger_end_{};
};

}  // namespace sf::comm::zmq
