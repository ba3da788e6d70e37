// Fuzz target: the mpi transport's message header (comm/mpi/header.h), a fixed-layout record
// from a peer. The input is the received bytes; a header that decodes must encode to exactly
// those bytes, and its payload size must not overflow. Refusals are sf::IoError.
#include <vector>

#include <shardflow/comm/mpi/header.h>
#include <shardflow/core/error.h>
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sf::comm::mpi::MessageHeader h;
  try {
    h = sf::comm::mpi::decode_header(data, size);
  } catch (const sf::Error&) {
    return 0;
  }
  const std::vector<uint8_t> again = sf::comm::mpi::encode_header(h);
  SF_FUZZ_CHECK(again == std::vector<uint8_t>(data, data + size));
  SF_FUZZ_CHECK(h.numel() >= 0);
  (void)h.payload_bytes();
  return 0;
}
