#include <shardflow/comm/zmq/handshake.h>

#include <sodium.h>

#include <cstring>

namespace sf::comm::zmq {

namespace {

constexpr std::string_view kKeyContext = "shardflow zmq job key v1";

void init_sodium() {
  static const int rc = sodium_init();  // thread-safe and idempotent; < 0 only if unusable
  SF_ENFORCE(rc >= 0, Error, "zmq: libsodium could not be initialised");
}

Nonce nonce_from(const std::vector<uint8_t>& auth, size_t offset) {
  Nonce n{};
  std::memcpy(n.data(), auth.data() + offset, n.size());
  return n;
}

bool proof_matches(const Proof& want, const std::vector<uint8_t>& auth, size_t offset) {
  return auth.size() >= offset + kProofBytes && crypto_verify_32(want.data(), auth.data() + offset) == 0;
}

}  // namespace

JobKey::JobKey(std::string_view secret) {
  SF_ENFORCE(!secret.empty(), InvalidArgument, "zmq: the job secret is empty (every rank must be given the same one)");
  init_sodium();
  crypto_generichash(key_.data(), key_.size(), reinterpret_cast<const unsigned char*>(secret.data()), secret.size(),
                     reinterpret_cast<const unsigned char*>(kKeyContext.data()), kKeyContext.size());
}

Proof JobKey::prove(char role, Purpose purpose, const Nonce& client, const Nonce& server, int client_rank,
                    int server_rank) const {
  // "sfzq" | role | purpose | client nonce | server nonce | client rank | server rank (LE u32)
  uint8_t msg[6 + 2 * kNonceBytes + 8];
  std::memcpy(msg, "sfzq", 4);
  msg[4] = static_cast<uint8_t>(role);
  msg[5] = static_cast<uint8_t>(purpose);
  std::memcpy(msg + 6, client.data(), kNonceBytes);
  std::memcpy(msg + 6 + kNonceBytes, server.data(), kNonceBytes);
  for (int i = 0; i < 4; ++i) {
    msg[6 + 2 * kNonceBytes + i] = static_cast<uint8_t>(static_cast<uint32_t>(client_rank) >> (8 * i));
    msg[10 + 2 * kNonceBytes + i] = static_cast<uint8_t>(static_cast<uint32_t>(server_rank) >> (8 * i));
  }
  Proof out{};
  crypto_auth_hmacsha256(out.data(), msg, sizeof msg, key_.data());
  return out;
}

Nonce fresh_nonce() {
  init_sodium();
  Nonce n{};
  randombytes_buf(n.data(), n.size());
  return n;
}

std::string random_secret() {
  const Nonce bytes = fresh_nonce();
  char hex[2 * kNonceBytes + 1];
  sodium_bin2hex(hex, sizeof hex, bytes.data(), bytes.size());
  return std::string(hex);
}

ClientHandshake::ClientHandshake(const JobKey& key, Purpose purpose, int my_rank, int server_rank)
    : key_(key), purpose_(purpose), my_rank_(my_rank), server_rank_(server_rank), nonce_(fresh_nonce()) {}

Header ClientHandshake::hello() const {
  Header h;
  h.kind = Kind::kHello;
  h.from = my_rank_;
  h.auth.assign(nonce_.begin(), nonce_.end());
  return h;
}

Header ClientHandshake::answer(const Header& challenge) const {
  SF_ENFORCE(challenge.kind == Kind::kChallenge && challenge.auth.size() == kNonceBytes + kProofBytes, IoError,
             "zmq handshake: expected a challenge from rank {}", server_rank_);
  SF_ENFORCE(challenge.from == server_rank_, IoError, "zmq handshake: rank {} answered where rank {} was expected",
             challenge.from, server_rank_);
  const Nonce server_nonce = nonce_from(challenge.auth, 0);
  const Proof want = key_.prove('s', purpose_, nonce_, server_nonce, my_rank_, server_rank_);
  SF_ENFORCE(proof_matches(want, challenge.auth, kNonceBytes), IoError,
             "zmq handshake: rank {}'s endpoint does not prove the job secret", server_rank_);
  const Proof mine = key_.prove('c', purpose_, nonce_, server_nonce, my_rank_, server_rank_);
  Header h;
  h.kind = Kind::kProof;
  h.from = my_rank_;
  h.auth.assign(mine.begin(), mine.end());
  return h;
}

ServerHandshake::ServerHandshake(const JobKey& key, Purpose purpose, int my_rank)
    : key_(key), purpose_(purpose), my_rank_(my_rank), nonce_(fresh_nonce()) {}

Header ServerHandshake::challenge(const Header& hello) {
  client_rank_ = hello.from;
  client_nonce_ = nonce_from(hello.auth, 0);
  const Proof proof = key_.prove('s', purpose_, client_nonce_, nonce_, client_rank_, my_rank_);
  Header h;
  h.kind = Kind::kChallenge;
  h.from = my_rank_;
  h.auth.assign(nonce_.begin(), nonce_.end());
  h.auth.insert(h.auth.end(), proof.begin(), proof.end());
  return h;
}

bool ServerHandshake::accept(const Header& proof) const {
  if (proof.kind != Kind::kProof || proof.from != client_rank_ || client_rank_ < 0) return false;
  return proof_matches(key_.prove('c', purpose_, client_nonce_, nonce_, client_rank_, my_rank_), proof.auth, 0);
}

}  // namespace sf::comm::zmq
