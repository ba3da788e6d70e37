// Credit: application-level flow control of one (sender, receiver) link of the zmq backend.
// ZeroMQ's own high-water marks drop (ROUTER) or block (DEALER) without telling anyone, so
// the sockets run with unbounded HWMs and the bytes on their way are bounded here instead:
// the receiver grants credit back as messages arrive, and the sender keeps the rest queued
// in its own outbox (by reference; send() never blocks, as comm/transport.h promises).
//
// Each message costs charge(payload bytes) = payload + kMessageCharge, so the window bounds
// bytes and message count at once. The sender may send while in_flight + charge <= window,
// or while in_flight < window/4, so a message larger than the window still goes (alone, or
// after less than a quarter window). The receiver grants back what it holds once that
// reaches window/4. Together these cannot deadlock: a blocked sender has at least window/4
// in flight, and once those messages arrive the receiver holds window/4 and grants it.
// Bound: in_flight <= max(window, window/4 + the largest message).
//
// Threading: not synchronised; each side lives on its endpoint's I/O thread.
#pragma once

#include <cstdint>

namespace sf::comm::zmq {

inline constexpr uint64_t kMessageCharge = 256;

inline uint64_t charge(uint64_t payload_bytes) { return payload_bytes + kMessageCharge; }

// The sender's side: what it has sent and not yet been granted back.
class CreditWindow {
 public:
  explicit CreditWindow(uint64_t window) : window_(window) {}
  bool can_send(uint64_t cost) const { return in_flight_ + cost <= window_ || in_flight_ < window_ / 4; }
  void on_send(uint64_t cost) { in_flight_ += cost; }
  // A grant from the receiver; more than is in flight (a confused peer) only empties it.
  void on_grant(uint64_t bytes) { in_flight_ = bytes >= in_flight_ ? 0 : in_flight_ - bytes; }
  uint64_t in_flight() const { return in_flight_; }

 private:
  uint64_t window_;
  uint64_t in_flight_ = 0;
};

// The receiver's side: credit taken by arrived messages and not yet granted back.
class CreditReturn {
 public:
  explicit CreditReturn(uint64_t window) : threshold_(window / 4 > 0 ? window / 4 : 1) {}
  // Records an arrived message; returns the bytes to grant back now (0: keep holding).
  uint64_t on_arrival(uint64_t cost) {
    held_ += cost;
    if (held_ < threshold_) return 0;
    const uint64_t grant = held_;
    held_ = 0;
    return grant;
  }

 private:
  uint64_t threshold_;
  uint64_t held_ = 0;
};

}  // namespace sf::comm::zmq
