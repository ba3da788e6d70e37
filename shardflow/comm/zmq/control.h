// The control messages of the zmq backend's side sockets — the rendezvous (comm/zmq/rendezvous.h)
// and an elastic world's door (comm/zmq/door.h): one header frame, after a ROUTER's routing id,
// and the wait for a socket to be readable.
//
// Threading: a socket's own thread (libzmq's rules, comm/zmq/socket.h).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <shardflow/comm/zmq/header.h>
#include <shardflow/comm/zmq/socket.h>

namespace sf::comm::zmq {

// Sends `h` as one frame, after the routing id `rid` of a ROUTER's peer when given; `more` when a
// payload frame follows. False if libzmq would block or the peer is gone.
bool send_header(Socket& s, const Header& h, const std::string* rid, bool more = false);

// Waits for `s` to be readable until `deadline` (an interrupted wait goes on); false when it
// passed. Throws Error naming `who` ("zmq rendezvous") when zmq_poll fails.
bool wait_readable(Socket& s, std::chrono::steady_clock::time_point deadline, std::string_view who);

}  // namespace sf::comm::zmq
