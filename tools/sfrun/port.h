// The rendezvous port on this machine: pick a free one, or check that a given one is free.
// Both bind a TCP socket with SO_REUSEADDR, as libzmq's listener does, so a port that rank 0
// could bind is reported free and one that some process listens on is reported in use. A
// picked port stays free only until someone else takes it; rank 0 binds it a moment later, so it is
// picked below the kernel's ephemeral range, where only explicit binds land.
//
// Threading: pure functions.
#pragma once

#include <optional>
#include <string>

namespace sf::sfrun {

// A port that `addr` (dotted IPv4 of this machine) can bind now; sf::Error if none.
int pick_free_port(const std::string& addr);

// Empty if `addr`:`port` can be bound now, else why not ("in use", "cannot assign address").
std::optional<std::string> port_problem(const std::string& addr, int port);

}  // namespace sf::sfrun
