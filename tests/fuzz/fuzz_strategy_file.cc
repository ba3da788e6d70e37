// Fuzz target: strategy files (parallel/strategy_file.h), a user's JSON that says how every op
// is sharded. The input is the file's text. A file that loads must save and load back to the
// same JSON. Refusals are InvalidArgument or IoError (both sf::Error).
#include <string>

#include <shardflow/core/error.h>
#include "fuzz_input.h"
#include <shardflow/parallel/strategy_file.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = sf::fuzz::scratch_path("strategy_file", ".json");
  sf::fuzz::write_file(path, data, size);
  sf::StrategyTable table;
  try {
    table = sf::load_strategy_file(path);
  } catch (const sf::Error&) {
    return 0;
  }
  // What loaded is valid: saving it must work and give a file that loads to the same table.
  const std::string saved = sf::strategy_json(table);
  sf::fuzz::write_file(path, reinterpret_cast<const uint8_t*>(saved.data()), saved.size());
  const sf::StrategyTable again = sf::load_strategy_file(path);
  SF_FUZZ_CHECK(sf::strategy_json(again) == saved);
  return 0;
}
