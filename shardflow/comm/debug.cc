#include <shardflow/comm/debug.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace sf::comm {

namespace {

std::atomic<bool>& flag() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("SF_COMM_DEBUG");
    return v && *v && std::strcmp(v, "0") != 0;
  }()};
  return on;
}

}  // namespace

bool debug_checks() { return flag().load(std::memory_order_relaxed); }
void set_debug_checks(bool on) { flag().store(on, std::memory_order_relaxed); }

}  // namespace sf::comm
