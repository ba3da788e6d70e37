// Call: one collective call on one rank — its group, sequence number, deadline and the
// send/recv helpers every algorithm uses. Algorithms address peers by group rank and a slot;
// Call turns them into world ranks and tags (comm/group.h).
//
// Failure: recv() waits at most until the call's deadline (the options' timeout from the
// start of the call). When it expires, Call finds out which rank is to blame before throwing:
// it sends a notice "I (rank r) am stuck waiting for rank p" to every group member and, for a
// grace period, collects theirs. Members that sent none are lost; following the chain of
// "waiting for" from p leads to the lost rank that stalled everyone (in a ring, all ranks
// block behind one absent rank, though most wait for a live neighbour). The PeerLost names that
// rank, the collective and its sequence number, and the group is marked failed. A peer whose
// endpoint closed (the transport says so at once) is named directly; this rank still sends its
// notice, so ranks stalled behind it name the closed rank too when their own deadline passes.
// (Waking those ranks early needs an abort message the transport can deliver to a blocked
// receive: left for the zmq/mpi backends' failure detector.)
//
// Threading: a Call is used by the one thread running the collective.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "comm/group.h"
#include "core/tensor.h"

namespace sf::comm::detail {

// Slot reserved for failure notices.
inline constexpr uint8_t kNoticeSlot = 255;

class Call {
 public:
  // Throws the group's earlier failure, if any.
  Call(std::string_view op, const Group& group, uint32_t seq, std::chrono::milliseconds timeout);

  int rank() const { return group_.rank(); }
  int size() const { return group_.size(); }
  uint32_t seq() const { return seq_; }
  // "AllReduce (group 'world', seq 3, rank 1)"
  std::string where() const;

  // Sends t to group rank `peer` (ownership passes to the message, comm/transport.h).
  void send(int peer, const Tensor& t, uint8_t slot = 0);
  // The next message from group rank `peer` under `slot`; PeerLost as described above.
  Tensor recv(int peer, uint8_t slot = 0);

 private:
  [[noreturn]] void fail_after_timeout(int peer);
  // Tells every other member that this rank is stuck waiting for group rank `peer`.
  void send_notices(int peer);

  std::string op_;
  Group group_;
  uint32_t seq_;
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point deadline_;
};

// Grace period for collecting failure notices after a timeout: timeout/2, at most 5 s.
std::chrono::milliseconds notice_grace(std::chrono::milliseconds timeout);

// Checks shared by every collective: group defined, timeout positive, input defined.
void check_group(std::string_view op, const Group& group);
void check_common(std::string_view op, const Group& group, std::chrono::milliseconds timeout);
void check_input(std::string_view op, const Tensor& input);

}  // namespace sf::comm::detail
