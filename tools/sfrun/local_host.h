// Which host names mean "this machine" (its ranks are started directly, not through the
// agent), and name -> IPv4 address resolution for the rendezvous address.
//
// Threading: pure functions over the machine's current interfaces and resolver.
#pragma once

#include <string>

namespace sf::sfrun {

// True for localhost, 127.x.x.x, ::1, this machine's host name (short or full), and any
// address of one of this machine's interfaces.
bool is_local_host(const std::string& host);

// The dotted IPv4 address of `host` (itself if already numeric); sf::InvalidArgument naming
// `what` if it does not resolve.
std::string resolve_ipv4(const std::string& host, const std::string& what);

bool is_loopback_ipv4(const std::string& addr);

}  // namespace sf::sfrun
