#include <shardflow/core/fault_point.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace sf {

namespace {

// What SF_FAULT_AT arms in this process, read once.
struct Armed {
  bool on = false;
  std::string name;
  long long at = 0;
  std::atomic<long long> passed{0};
};

Armed* read_armed() {
  auto* a = new Armed;  // lives as long as the process: fault points may run during exit
  const char* v = std::getenv("SF_FAULT_AT");
  if (!v || !*v) return a;
  char name[64] = {0};
  long long at = 0;
  int rank = -1, used = 0;
  const bool parsed = std::sscanf(v, "%63[a-z]:%lld:%d%n", name, &at, &rank, &used) == 3 &&
                      used == static_cast<int>(std::strlen(v)) && at >= 1 && rank >= 0;
  if (!parsed) {
    std::fprintf(stderr, "shardflow: SF_FAULT_AT='%.80s' is not NAME:N:RANK (N >= 1); no fault point is armed\n", v);
    return a;
  }
  const char* me = std::getenv("SF_RANK");
  a->on = me && std::atoi(me) == rank;
  a->name = name;
  a->at = at;
  return a;
}

}  // namespace

void fault_point(const char* name) {
  static Armed* const armed = read_armed();
  if (!armed->on || armed->name != name) return;
  if (armed->passed.fetch_add(1, std::memory_order_relaxed) + 1 == armed->at) std::raise(SIGKILL);
}

}  // namespace sf
