// Fuzz target: the zmq backend's control-plane frames (comm/zmq/header.h) and the job-secret
// handshake that consumes them (comm/zmq/handshake.h), as a ROUTER or DEALER socket would
// receive them from anyone who reaches the endpoint.
//
// Input: byte 0 picks the world size (1..256, what the decoder's limits depend on), the rest
// is the header frame. A header that decodes must encode and decode back to the same fields;
// it is then handed to the handshake step that its kind reaches in the engine (a hello to a
// server, a proof to a server that has seen a hello, a challenge to a client), which must
// refuse a forged one without reading outside the frame. Refusals are MalformedFrame (an
// sf::IoError) from the decoder and sf::IoError from the client's handshake.
#include <vector>

#include <shardflow/comm/zmq/handshake.h>
#include <shardflow/comm/zmq/header.h>
#include <shardflow/core/error.h>
#include "fuzz_input.h"

using namespace sf::comm::zmq;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  HeaderLimits limits;
  limits.world_size = 1 + data[0];
  Header h;
  try {
    h = decode_header(data + 1, size - 1, limits);
  } catch (const sf::Error&) {
    return 0;
  }
  SF_FUZZ_CHECK(h.from >= 0 && h.from < limits.world_size);
  // Encoding keeps only the fields of h's kind (a decoder ignores the others), so the round
  // trip is checked on what is encoded: it must decode to the same fields and encode the same.
  const std::vector<uint8_t> bytes = encode_header(h);
  const Header again = decode_header(bytes.data(), bytes.size(), limits);
  SF_FUZZ_CHECK(encode_header(again) == bytes);
  SF_FUZZ_CHECK(again.kind == h.kind && again.from == h.from && again.auth == h.auth);

  static const JobKey key("fuzz secret");
  const int me = limits.world_size - 1;
  if (h.kind == Kind::kHello) {
    ServerHandshake server(key, Purpose::kLink, me);
    const Header challenge = server.challenge(h);
    SF_FUZZ_CHECK(challenge.kind == Kind::kChallenge && challenge.auth.size() == kNonceBytes + kProofBytes);
  } else if (h.kind == Kind::kProof) {
    // A proof arrives after a hello from the same connection; a forged one must not pass.
    ServerHandshake server(key, Purpose::kLink, me);
    server.challenge(ClientHandshake(key, Purpose::kLink, h.from, me).hello());
    SF_FUZZ_CHECK(!server.accept(h));
  } else if (h.kind == Kind::kChallenge) {
    // The fresh client nonce makes a forged server proof fail, so answer() must refuse.
    ClientHandshake client(key, Purpose::kLink, me, h.from);
    bool refused = false;
    try {
      client.answer(h);
    } catch (const sf::IoError&) {
      refused = true;
    }
    SF_FUZZ_CHECK(refused);
  }
  return 0;
}
