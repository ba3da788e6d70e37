// ZmqStats: what one zmq endpoint has refused, dropped and moved, for tests and operators
// (ZmqTransport::stats()). Every frame set the I/O thread drops is counted under exactly one
// reason; nothing a peer sends can crash the endpoint or throw out of its thread.
//
// Threading: a snapshot (plain values). The endpoint keeps the live counters as atomics.
#pragma once

#include <cstdint>

namespace sf::comm {

struct ZmqStats {
  // Connections whose handshake failed (wrong or missing proof of the job secret, a rank
  // outside the world or already connected) and lane connections without the token offered
  // to the rank they claim: logged once each on stderr with the address.
  uint64_t refused_peers = 0;
  // Well-formed messages dropped because their connection has not proven the secret.
  uint64_t unauthenticated = 0;
  // Malformed messages, by defect (comm/zmq/header.h): a wrong number of frames; a header
  // that is not the msgpack the grammar asks for; a byte count that does not match
  // dtype x shape or the payload frame; a payload over ZmqOptions::max_payload_bytes; a
  // sender rank outside the world or not the one the connection proved.
  uint64_t bad_frame_count = 0;
  uint64_t bad_header = 0;
  uint64_t bad_byte_count = 0;
  uint64_t oversized = 0;
  uint64_t bad_sender = 0;
  // Tensors moved over the wire (self-sends excluded).
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  // Times a send found its lane's socket full and left the rest of its bytes to the I/O
  // thread (the one hand-off a send can cost).
  uint64_t deferred_sends = 0;
  // Peers this endpoint lost without a close notice (disconnected, heartbeat timeout).
  uint64_t peers_lost = 0;

  uint64_t malformed() const { return bad_frame_count + bad_header + bad_byte_count + oversized + bad_sender; }
};

}  // namespace sf::comm
