// Header: the msgpack frame that opens every message of the zmq backend — a tensor's
// transport tag, dtype, shape, byte count and sender, or one of the small control messages
// (close notice, the handshake, the lane offer, the rendezvous). The grammar, with the frames
// around it, is in docs/zmq_transport.md; the tensor fields keep the names and encodings of
// docs/tensor_format.md.
//
// Decoding trusts nothing: the bytes may come from any socket that reached an endpoint. It
// refuses with MalformedFrame, whose defect() says which ZmqStats counter the drop goes to.
//
// Threading: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <shardflow/comm/transport.h>
#include <shardflow/core/dtype.h>
#include <shardflow/core/error.h>
#include <shardflow/core/shape.h>

namespace sf::comm::zmq {

enum class Kind : uint8_t {
  kData = 0,       // tensor: tag, dtype, shape, nbytes; a payload frame of nbytes follows
  kClose = 1,      // the sender closed its endpoint
  kLane = 2,       // receiver -> sender: auth = lane token, endpoints = [its lane endpoint] (comm/zmq/lane.h)
  kHello = 3,      // handshake 1, client -> server: auth = client nonce
  kChallenge = 4,  // handshake 2, server -> client: auth = server nonce, server proof
  kProof = 5,      // handshake 3, client -> server: auth = client proof
  kJoin = 6,       // rendezvous, rank -> rank 0: size, endpoints = [its data endpoint]
  kTable = 7,      // rendezvous, rank 0 -> rank: endpoints = every rank's, by rank
};
inline constexpr uint8_t kLastKind = 7;

// "data", "close", ... for messages.
std::string_view kind_name(Kind k);

struct Header {
  Kind kind = Kind::kData;
  int from = 0;  // sender's rank
  Tag tag = 0;
  DType dtype = DType::kF32;
  Shape shape;
  uint64_t nbytes = 0;
  int size = 0;  // kJoin: the world size the sender was started with
  std::vector<uint8_t> auth;
  std::vector<std::string> endpoints;

  bool operator==(const Header&) const = default;
};

inline constexpr uint32_t kWireVersion = 2;
inline constexpr size_t kMaxDims = 16;
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kProofBytes = 32;
inline constexpr size_t kLaneOfferBytes = 32;

// Why a frame set is dropped; one ZmqStats counter each.
enum class Defect : uint8_t { kFrameCount, kHeader, kByteCount, kOversized, kSender };

class MalformedFrame : public IoError {
 public:
  MalformedFrame(Defect defect, const std::string& msg, std::string where = {})
      : IoError(msg, std::move(where)), defect_(defect) {}
  Defect defect() const { return defect_; }

 private:
  Defect defect_;
};

// What a decoder accepts from the world it belongs to.
struct HeaderLimits {
  int world_size = 1;
  uint64_t max_payload_bytes = uint64_t{1} << 32;
};

std::vector<uint8_t> encode_header(const Header& h);

// Throws MalformedFrame naming the defect: not exactly one msgpack map, a missing, repeated
// or mistyped field, an unknown version, kind or dtype, an auth field of the wrong length for
// its kind, more than kMaxDims dims or a negative one, a join or table with the wrong number
// of endpoints (kHeader); `from` outside the world (kSender); nbytes over the limit
// (kOversized); an overflowing shape or nbytes != 4 x product(shape) (kByteCount). Never
// reads past `n` bytes.
Header decode_header(const uint8_t* bytes, size_t n, const HeaderLimits& limits);

}  // namespace sf::comm::zmq
