// Handshake: how the two ends of a zmq connection prove to each other that they hold the
// job secret, without sending it (docs/zmq_transport.md, "Security"). Three messages on the
// connection, before anything else is accepted from it:
//
//   client -> server  kHello      from = client rank, auth = client nonce
//   server -> client  kChallenge  from = server rank, auth = server nonce | server proof
//   client -> server  kProof      from = client rank, auth = client proof
//
// A proof is HMAC-SHA-256 under a key derived from the secret (keyed BLAKE2b), over the role,
// the purpose (data link or rendezvous), both nonces and both ranks, so it cannot be replayed
// on another connection, by another rank or in the other direction. The nonces are fresh
// random 32 bytes. The client checks the server's proof before it sends its own, so it never
// talks to an endpoint that lacks the secret either.
//
// What this does not give: confidentiality or integrity of the messages that follow (CURVE
// would, at a measured cost: docs/zmq_transport.md); the connection is trusted once proven.
//
// Threading: JobKey is immutable after construction; handshakes are used by one thread and
// keep a reference to their JobKey, which must outlive them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <shardflow/comm/zmq/header.h>

namespace sf::comm::zmq {

using Nonce = std::array<uint8_t, kNonceBytes>;
using Proof = std::array<uint8_t, kProofBytes>;

enum class Purpose : uint8_t { kLink = 0, kRendezvous = 1, kDoor = 2 };

// The MAC key of a job, derived from its secret.
class JobKey {
 public:
  // Throws InvalidArgument for an empty secret.
  explicit JobKey(std::string_view secret);
  // HMAC-SHA-256 of (role, purpose, nonces, ranks); role is 's' or 'c'.
  Proof prove(char role, Purpose purpose, const Nonce& client, const Nonce& server, int client_rank,
              int server_rank) const;

 private:
  std::array<uint8_t, 32> key_;
};

Nonce fresh_nonce();
// 64 random hex digits, for worlds made without a given secret.
std::string random_secret();

// The client's side of one connection's handshake.
class ClientHandshake {
 public:
  ClientHandshake(const JobKey& key, Purpose purpose, int my_rank, int server_rank);
  Header hello() const;
  // Checks the server's proof and returns the client's; throws IoError if the server does
  // not hold the secret (or is not the rank the client wanted).
  Header answer(const Header& challenge) const;

 private:
  const JobKey& key_;
  Purpose purpose_;
  int my_rank_, server_rank_;
  Nonce nonce_;
};

// The server's side of one connection's handshake.
class ServerHandshake {
 public:
  ServerHandshake(const JobKey& key, Purpose purpose, int my_rank);
  // Remembers the client's nonce and rank and returns the challenge.
  Header challenge(const Header& hello);
  // True if `proof` proves the secret for this connection's hello and challenge.
  bool accept(const Header& proof) const;
  int client_rank() const { return client_rank_; }

 private:
  const JobKey& key_;
  Purpose purpose_;
  int my_rank_;
  int client_rank_ = -1;
  Nonce client_nonce_{}, nonce_{};
};

}  // namespace sf::comm::zmq
