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
// A rank whose call fails also tells every member, on a per-group tag outside any call, whom
// it was stuck waiting for: a rank that has moved on to the next collective and times out
// waiting for this one follows that to the rank that stalled both.
// (Waking those ranks early needs an abort message the transport can deliver to a blocked
// receive: left for the zmq/mpi backends' failure detector.)
//
// Debug mode (comm/debug.h): the constructor first exchanges the call's Signature with every
// other member and throws InvalidArgument, identical on every rank and naming which rank
// called what, if they differ. Every call is kept in the group's flight recorder
// (comm/flight_recorder.h), which a rank writes to stderr when one of its calls times out.
//
// Threading: a Call is used by the one thread running the collective.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <shardflow/comm/detail/signature.h>
#include <shardflow/comm/group.h>
#include <shardflow/core/tensor.h>

namespace sf::comm::detail {

// Slots reserved for failure notices and debug-mode signatures.
inline constexpr uint8_t kNoticeSlot = 255;
inline constexpr uint8_t kSignatureSlot = 254;

class Call {
 public:
  // Throws the group's earlier failure, if any, and in debug mode a signature mismatch.
  Call(Signature sig, const Group& group, uint32_t seq, std::chrono::milliseconds timeout);
  // A call whose signature is its name alone.
  Call(std::string_view op, const Group& group, uint32_t seq, std::chrono::milliseconds timeout)
      : Call(Signature::bare(op), group, seq, timeout) {}
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  int rank() const { return group_.rank(); }
  int size() const { return group_.size(); }
  uint32_t seq() const { return seq_; }
  // "AllReduce (group 'world', seq 3, rank 1)"
  std::string where() const;

  // Elements of `dtype` per segment of the ring and tree algorithms on this group's transport.
  int64_t segment_elems(DType dtype) const;

  // Sends t to group rank `peer` (ownership passes to the message, comm/transport.h).
  void send(int peer, const Tensor& t, uint8_t slot = 0);
  // The next message from group rank `peer` under `slot`; PeerLost as described above.
  Tensor recv(int peer, uint8_t slot = 0);

 private:
  void check_signature(const Signature& mine);
  [[noreturn]] void fail_after_timeout(int peer);
  // Tells every other member that this rank is stuck waiting for group rank `peer`.
  void send_notices(int peer);
  // Tells every member, outside this call, that this rank is stuck waiting for group rank `peer`.
  void announce_stuck(int peer);

  std::string op_;
  Group group_;
  uint32_t seq_;
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point deadline_;
  int uncaught_ = 0;   // std::uncaught_exceptions() at construction
  std::string error_;  // the failure this call threw, for the flight recorder
};

// Grace period for collecting failure notices after a timeout: timeout/2, at most 5 s.
std::chrono::milliseconds notice_grace(std::chrono::milliseconds timeout);

// Checks shared by every collective: group defined, timeout positive, input defined.
void check_group(std::string_view op, const Group& group);
void check_common(std::string_view op, const Group& group, std::chrono::milliseconds timeout);
void check_input(std::string_view op, const Tensor& input);

}  // namespace sf::comm::detail
