// Hostfile: the hosts of a multi-host job, one per line, in the form Open MPI's hostfiles use:
//
//     # comment
//     node1 slots=4
//     node2 slots=4 addr=10.0.0.2
//
// `host` is the name the agent reaches the host by (an ssh name, or a network namespace with
// `--agent "ip netns exec {host} sh -c"`); `slots` (default 1) is how many ranks it may run;
// `addr` (default: host) is the address other hosts reach it at, which rank 0's host binds for
// the rendezvous. Every malformed line is refused naming FILE:LINE. A hostfile is at most
// kMaxHostfileBytes and kMaxHostfileLines (docs/limits.md): checked before it is read, so an
// endless or huge file (`--hostfile /dev/zero`) is refused in one line, not read into memory.
//
// Threading: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sf::sfrun {

struct HostEntry {
  std::string host;
  int slots = 1;
  std::string addr;  // empty: the host name
  int line = 0;      // 1-based line in the file, for messages
};

inline constexpr size_t kMaxHostfileBytes = size_t{1} << 20;
inline constexpr int kMaxHostfileLines = 65536;

// Parses the text of a hostfile named `file` (used in messages only).
std::vector<HostEntry> parse_hostfile(std::string_view text, const std::string& file);

// Reads and parses the file at `path`; sf::IoError if it cannot be read.
std::vector<HostEntry> read_hostfile(const std::string& path);

}  // namespace sf::sfrun
