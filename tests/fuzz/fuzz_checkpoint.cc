// Fuzz target: checkpoint files (train/checkpoint.h), which load_checkpoint only reads from a
// path: each input is written to a scratch file first. A checkpoint that loads must save and
// load back to the same names and tensor bytes. Refusals are sf::IoError.
#include <cstring>
#include <string>

#include <shardflow/core/error.h>
#include "fuzz_input.h"
#include <shardflow/train/checkpoint.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = sf::fuzz::scratch_path("checkpoint", ".ckpt");
  static const std::string resaved = sf::fuzz::scratch_path("checkpoint", ".resaved.ckpt");
  sf::fuzz::write_file(path, data, size);
  sf::NamedTensors loaded;
  try {
    loaded = sf::load_checkpoint(path);
  } catch (const sf::Error&) {
    return 0;
  }
  sf::save_checkpoint(loaded, resaved);
  const sf::NamedTensors again = sf::load_checkpoint(resaved);
  SF_FUZZ_CHECK(again.size() == loaded.size());
  for (size_t i = 0; i < again.size(); ++i) {
    const sf::Tensor &a = loaded[i].second, &b = again[i].second;
    SF_FUZZ_CHECK(again[i].first == loaded[i].first);
    SF_FUZZ_CHECK(a.shape() == b.shape() && a.dtype() == b.dtype() && a.nbytes() == b.nbytes());
    SF_FUZZ_CHECK(a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
  }
  return 0;
}
