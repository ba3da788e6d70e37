// The door of an elastic world (comm/transport.h JoinDoor) over zmq, and the replacement
// rank's side of it. The world's rank 0 binds a ROUTER; a replacement connects a DEALER,
// proves the job secret (comm/zmq/handshake.h, purpose kDoor; the door proves it back) and
// then, once the door has sent the sizes of its first messages (kData, tag 2, i32 KiB each:
// JoinDoor::expect, empty when it was not told), readies receive buffers of those sizes and asks
// with a kJoin whose `from` is its label: the members train on while it readies them, and the
// state's bytes then arrive at the transport's speed rather than at the first touch of fresh
// memory. When the members admit it, the door sends a kData message whose payload (i32) is the
// admission — generation, rank, size, the labels, then the members' addresses as text — and the
// replacement answers with a kJoin carrying the address of its new endpoint. A kClose from the
// door refuses it.
//
// Threading: a door is used by one thread at a time; a DoorClient by one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/comm/transport.h>
#include <shardflow/comm/zmq/handshake.h>
#include <shardflow/comm/zmq/socket.h>

namespace sf::comm::zmq {

// A door bound at `bind_to` ("tcp://10.0.0.2:*" or an ipc path) whose callers must prove
// `job_secret`. Refuses whoever still waits when it is destroyed.
std::unique_ptr<JoinDoor> open_zmq_door(const std::string& bind_to, const std::string& job_secret);

// What the door told a replacement rank.
struct DoorAdmission {
  uint32_t generation = 0;
  int rank = 0;
  int size = 0;
  std::vector<int> labels;             // by rank
  std::vector<std::string> addresses;  // by rank; this rank's is empty
};

// The replacement rank's side: connects to `door` and asks as `label`.
class DoorClient {
 public:
  DoorClient(const std::string& door, const std::string& job_secret, int label);
  // Waits for the admission until `deadline`; throws Error when the door refuses (the job
  // ended, or its world changed) or does not answer in time.
  DoorAdmission wait_admission(std::chrono::steady_clock::time_point deadline);
  // Sends the address of this rank's new endpoint; it leaves before the client is destroyed.
  void answer(const std::string& address);

 private:
  // Readies receive buffers of `kib` KiB each (JoinDoor::expect).
  void prefault(const std::vector<int32_t>& kib);

  Context ctx_;
  Socket socket_;
  std::string door_;
  JobKey key_;
  int label_;
};

}  // namespace sf::comm::zmq
