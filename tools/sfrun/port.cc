#include "tools/sfrun/port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

}  // namespace

int pick_free_port(const std::string& addr) {
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
