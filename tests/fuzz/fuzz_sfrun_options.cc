// Fuzz target: sfrun's command line (tools/sfrun/options.h). The input is argv without argv[0],
// its arguments separated by NUL bytes. Refusals are sf::InvalidArgument and HelpRequested (for
// -h/--help, documented); what parses must satisfy the documented value rules, and its
// durations must convert to milliseconds without overflow.
#include <string>
#include <vector>

#include <shardflow/core/error.h>
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
  // Seconds become int64 milliseconds (and deadlines) downstream: they must be finite and small
  // enough for that (the limit --comm-timeout has too).
  constexpr double kMaxSeconds = 1e7;
  SF_FUZZ_CHECK(o.grace >= 0 && o.grace <= kMaxSeconds);
  SF_FUZZ_CHECK(o.probe_timeout > 0 && o.probe_timeout <= kMaxSeconds);
  SF_FUZZ_CHECK(!o.timeout || (*o.timeout > 0 && *o.timeout <= kMaxSeconds));
  return 0;
}
