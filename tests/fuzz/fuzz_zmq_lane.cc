// Fuzz target: the zmq backend's data lanes (comm/zmq/lane.h): the greeting that opens a lane
// stream and the length-prefixed frames that follow, as a connecting socket could send them.
//
// Input: the first kLaneGreetingBytes bytes are the greeting (checked as the engine checks one:
// the rank it names, the token it carries); the rest is the stream, written into one end of a
// socket pair whose other end is read by an InLane of a 4-rank world from rank 1, until the
// lane is done (close notice, malformed frame or end of stream). The lane reports a bad frame
// through its `malformed` event, never by throwing; the receiver's payload limit is set to
// 1 MiB (ZmqOptions::max_payload_bytes), so a header asking for more is refused unallocated.
// Streams longer than kMaxStream are cut there, so that writing them never blocks.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/zmq/lane.h>
#include <shardflow/core/error.h>
#include "fuzz_input.h"

using namespace sf::comm::zmq;

namespace {
constexpr size_t kMaxStream = 64 << 10;  // well under a unix socket's default buffer
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kLaneGreetingBytes) return 0;
  LaneToken token{};
  for (size_t i = 0; i < token.size(); ++i) token[i] = static_cast<uint8_t>(i);
  const int rank = lane_greeting_rank(data);
  SF_FUZZ_CHECK(rank >= -1 && rank <= (1 << 20));
  (void)lane_greeting_has(data, token);
  SF_FUZZ_CHECK(lane_greeting_has(lane_greeting(3, token).data(), token));

  int fds[2];
  SF_FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  const uint8_t* stream = data + kLaneGreetingBytes;
  const size_t n = std::min(size - kLaneGreetingBytes, kMaxStream);
  for (size_t done = 0; done < n;) {
    const ssize_t w = ::write(fds[0], stream + done, n - done);
    SF_FUZZ_CHECK(w > 0);
    done += static_cast<size_t>(w);
  }
  ::close(fds[0]);  // the reader then sees the end of the stream after the input

  HeaderLimits limits;
  limits.world_size = 4;
  limits.max_payload_bytes = 1 << 20;
  InLane lane(/*peer=*/1, limits);
  SF_FUZZ_CHECK(lane.attach(fds[1], 0));  // the lane owns and closes the socket
  int messages = 0, endings = 0;
  InLane::Events ev;
  ev.message = [&](sf::comm::Tag, sf::Tensor t) {
    SF_FUZZ_CHECK(t.nbytes() <= limits.max_payload_bytes);
    sf::comm::BufferPool::global().release(t);  // a receiver's part of the ownership contract
    ++messages;
  };
  ev.closed = [&] { ++endings; };
  ev.lost = [&](const std::string&) { ++endings; };
  ev.malformed = [&](const MalformedFrame&) { ++endings; };
  // Every read makes progress or ends the lane; the bound only turns a hang into a finding.
  for (int turns = 0; !lane.done(); ++turns) {
    SF_FUZZ_CHECK(turns <= 1000);
    lane.read(kLaneReadBudget, ev);
  }
  SF_FUZZ_CHECK(endings == 1);
  return 0;
}
