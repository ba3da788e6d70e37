// Fuzz target: sfrun's hostfile (tools/sfrun/hostfile.h). The input is the file's text, given
// to parse_hostfile (read_hostfile only adds the size and file-type checks before it).
// Refusals are sf::InvalidArgument; what parses must satisfy the documented rules.
#include <set>
#include <string>
#include <string_view>

#include <shardflow/core/error.h>
#include "fuzz_input.h"
#include "tools/sfrun/hostfile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<sf::sfrun::HostEntry> hosts;
  try {
    hosts = sf::sfrun::parse_hostfile(text, "fuzz.hosts");
  } catch (const sf::Error&) {
    return 0;
  }
  SF_FUZZ_CHECK(!hosts.empty());
  std::set<std::string> names;
  for (const auto& h : hosts) {
    SF_FUZZ_CHECK(!h.host.empty() && h.slots >= 1 && h.slots <= 4096 && h.line >= 1);
    SF_FUZZ_CHECK(names.insert(h.host).second);
  }
  return 0;
}
