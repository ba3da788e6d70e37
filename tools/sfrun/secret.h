// The per-job secret every rank proves it knows in the zmq handshake (comm/zmq/handshake.h):
// 32 bytes from /dev/urandom, as 64 hex digits. It reaches local ranks in their environment
// (SF_JOB_SECRET) and remote ranks on the agent's stdin, never on a command line, where any
// user of the host could read it.
//
// Threading: pure function.
#pragma once

#include <string>

namespace sf::sfrun {

// sf::IoError if /dev/urandom cannot be read.
std::string make_job_secret();

}  // namespace sf::sfrun
