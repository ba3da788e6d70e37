// Fuzz target: sfrun's command line (tools/sfrun/options.h). The input is argv without argv[0],
// its arguments separated by NUL bytes. Refusals are sf::InvalidArgument and HelpRequested (for
// -h/--help, documented); what parses must satisfy the documented value rules.
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_input.h"
#include "tools/sfrun/options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> args = sf::fuzz::split(data, size, '\0');
  sf::sfrun::Options o;
  try {
    o = sf::sfrun::parse_options(args);
  } catch (const sf::Error&) {
    return 0;
  } catch (const sf::sfrun::HelpRequested&) {
    return 0;
  }
  SF_FUZZ_CHECK(o.n >= 1 && !o.command.empty() && (o.transport == "zmq" || o.transport == "mpi"));
  SF_FUZZ_CHECK(!o.master_port || (*o.master_port >= 1 && *o.master_port <= 65535));
  return 0;
}
