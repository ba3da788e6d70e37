// Rendezvous: how the ranks of a multi-process zmq job learn each other's data endpoints.
// Rank 0 binds a ROUTER on the rendezvous address; every other rank connects a DEALER to it,
// proves the job secret (comm/zmq/handshake.h, purpose kRendezvous; rank 0 proves it back),
// and sends a kJoin with its world size and its data endpoint. Once every rank has joined,
// rank 0 sends each the kTable of all endpoints, by rank. Connections that fail the
// handshake are logged and ignored; the rendezvous goes on.
//
// Threading: called once per process, on the thread making the world; its sockets live in
// the given context and are closed (with a linger, so the tables still leave) on return.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <shardflow/comm/zmq/handshake.h>
#include <shardflow/comm/zmq/options.h>
#include <shardflow/comm/zmq/socket.h>

namespace sf::comm::zmq {

// Returns every rank's data endpoint, by rank (`mine` at join.rank). Throws Error when
// `deadline` passes first, naming the ranks that never joined (rank 0) or the rendezvous
// that never answered (the others), and InvalidArgument when ranks disagree on the size.
std::vector<std::string> exchange_endpoints(Context& ctx, const JobKey& key, const ZmqJoin& join,
                                            const std::string& mine, std::chrono::steady_clock::time_point deadline);

// The local IPv4 address that routes to `host` (for binding a data endpoint other hosts can
// reach); "127.0.0.1" for loopback names. Throws Error if `host` does not resolve.
std::string local_address_toward(const std::string& host);

}  // namespace sf::comm::zmq
