// Fuzz target: tensor frames (core/serialize.h), the msgpack header and payload that files and
// transports carry. The input is the bytes handed to deserialize; a tensor that decodes must
// serialize and decode back to the same bytes. Refusals are sf::IoError.
#include <cstring>
#include <string>

#include <shardflow/core/error.h>
#include <shardflow/core/serialize.h>
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    size_t header_bytes = 0;
    const sf::TensorHeader h = sf::decode_header(data, size, &header_bytes);
    SF_FUZZ_CHECK(header_bytes <= size && h.nbytes <= sf::kMaxTensorBytes);
  } catch (const sf::Error&) {
  }
  sf::Tensor t;
  size_t consumed = 0;
  try {
    t = sf::deserialize(data, size, &consumed);
  } catch (const sf::Error&) {
    return 0;
  }
  SF_FUZZ_CHECK(consumed <= size);
  const std::string bytes = sf::serialize(t);
  size_t consumed_again = 0;
  const sf::Tensor u = sf::deserialize(bytes.data(), bytes.size(), &consumed_again);
  SF_FUZZ_CHECK(consumed_again == bytes.size());
  SF_FUZZ_CHECK(u.shape() == t.shape() && u.dtype() == t.dtype() && u.nbytes() == t.nbytes());
  SF_FUZZ_CHECK(t.nbytes() == 0 || std::memcmp(u.raw(), t.raw(), t.nbytes()) == 0);
  return 0;
}
