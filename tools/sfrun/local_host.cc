#include "tools/sfrun/local_host.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::sfrun {

bool is_loopback_ipv4(const std::string& addr) { return addr.rfind("127.", 0) == 0; }

bool is_local_host(const std::string& host) {
  if (host == "localhost" || host == "::1" || is_loopback_ipv4(host)) return true;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) {
    const std::string me = name;
    if (host == me || host == me.substr(0, me.find('.'))) return true;
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* a = list; a && !found; a = a->ifa_next) {
    if (!a->ifa_addr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET)
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof(text));
    else if (a->ifa_addr->sa_family == AF_INET6)
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, text, sizeof(text));
    found = host == text;
  }
  freeifaddrs(list);
  return found;
}

std::string resolve_ipv4(const std::string& host, const std::string& what) {
  in_addr numeric{};
  if (inet_pton(AF_INET, host.c_str(), &numeric) == 1) return host;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  SF_ENFORCE(rc == 0 && res, InvalidArgument, "{} '{}' does not resolve to an IPv4 address: {}", what, brief_text(host, 80),
             gai_strerror(rc));
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, text, sizeof(text));
  freeaddrinfo(res);
  return text;
}

}  // namespace sf::sfrun
