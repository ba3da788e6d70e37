// Holds a TCP port for sfrun's "port in use" test: listens on 127.0.0.1 at an ephemeral port,
// prints the port number, and keeps it until its stdin closes (or 120 s pass).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

int main() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || ::listen(fd, 4) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    std::perror("port_holder");
    return 1;
  }
  std::printf("%d\n", ntohs(sa.sin_port));
  std::fflush(stdout);
  pollfd in{0, POLLIN, 0};
  ::poll(&in, 1, 120000);
  return 0;
}
