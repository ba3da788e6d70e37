// Fuzz target: IDX dataset files (data/idx_file.h), raw or gzip-compressed, which read_idx
// only reads from a path: each input is written to a scratch file first. The expected magic is
// the images one when the input's fourth byte says 3 dims, else the labels one, so both of
// the magics MNIST-like sets use are reached. Refusals are sf::IoError.
#include <cstdint>
#include <string>

#include <shardflow/core/error.h>
#include <shardflow/data/idx_file.h>
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = sf::fuzz::scratch_path("idx_file");
  sf::fuzz::write_file(path, data, size);
  const uint32_t magic = size >= 4 && data[3] == 0x03 ? sf::dataset::kIdxImagesMagic : sf::dataset::kIdxLabelsMagic;
  try {
    const sf::dataset::IdxArray a = sf::dataset::read_idx(path, magic, "fuzz");
    uint64_t total = 1;
    for (int64_t d : a.dims) total *= static_cast<uint64_t>(d);
    SF_FUZZ_CHECK(a.dims.size() == (magic & 0xff) && a.bytes.size() == total);
  } catch (const sf::Error&) {
  }
  return 0;
}
