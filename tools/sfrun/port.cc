#include "tools/sfrun/port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include <shardflow/core/error.h>

namespace sf::sfrun {

namespace {

// Binds and listens on addr:port (0: any free port); returns the bound port, or -errno.
int try_bind(const std::string& addr, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) {
    ::close(fd);
    return -EINVAL;
  }
  int result = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || ::listen(fd, 1) != 0) {
    result = -errno;
  } else {
    socklen_t len = sizeof(sa);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    result = ntohs(sa.sin_port);
  }
  ::close(fd);
  return result;
}

// The lowest port the kernel hands out for bind(0) and connect(); 32768 when unreadable.
int ephemeral_low() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  int high = 0;
  if (in >> low >> high && low > 1024) return low;
  return 32768;
}

}  // namespace

int pick_free_port(const std::string& addr) {
  // Below the ephemeral range: a port the kernel picked for us would be free now, but between our
  // close and rank 0's bind the kernel may give it to any other socket of the machine (an ipc-less
  // world, an outgoing connection). Ports under the range are only ever taken by explicit binds.
  const int high = ephemeral_low();
  const int low = std::max(1025, high - 12000);
  std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> pick(low, high - 1);
  for (int attempt = 0; attempt < 64; ++attempt) {
    const int port = try_bind(addr, pick(rng));
    if (port > 0) return port;
  }
  const int port = try_bind(addr, 0);
  SF_ENFORCE(port > 0, Error, "cannot find a free port on {}: {}", addr, std::strerror(-port));
  return port;
}

std::optional<std::string> port_problem(const std::string& addr, int port) {
  const int rc = try_bind(addr, port);
  if (rc > 0) return std::nullopt;
  if (rc == -EADDRINUSE) return fmt::format("port {} on {} is in use", port, addr);
  return fmt::format("cannot bind {}:{}: {}", addr, port, std::strerror(-rc));
}

}  // namespace sf::sfrun
