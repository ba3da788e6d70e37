#include <shardflow/comm/options.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace sf::comm {

namespace {

std::chrono::milliseconds from_env() {
  const char* v = std::getenv("SF_COMM_TIMEOUT");
  if (!v || !*v) return kDefaultTimeout;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  // Above 1e7 s (about 116 days) the conversion to milliseconds, or a deadline, would overflow.
  if (*end != '\0' || !(s > 0) || s > 1e7) {
    // Options are built in constructors where throwing would surprise; say it and go on.
    std::fprintf(stderr,
                 "shardflow comm: SF_COMM_TIMEOUT='%s' is not a positive number of seconds up to 1e7; using %lld s\n", v,
                 static_cast<long long>(kDefaultTimeout.count() / 1000));
    return kDefaultTimeout;
  }
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000 + 0.5));
}

std::atomic<int64_t>& current() {
  static std::atomic<int64_t> ms{from_env().count()};
  return ms;
}

}  // namespace

std::chrono::milliseconds default_timeout() { return std::chrono::milliseconds(current().load()); }
void set_default_timeout(std::chrono::milliseconds timeout) { current().store(timeout.count()); }

}  // namespace sf::comm
