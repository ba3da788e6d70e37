#include <shardflow/comm/inproc/transport.h>

#include <shardflow/core/error.h>

namespace sf::comm::inproc {

InprocTransport::InprocTransport(std::shared_ptr<Fabric> fabric, int rank) : fabric_(std::move(fabric)), rank_(rank) {
  SF_ENFORCE(rank >= 0 && rank < fabric_->size(), InvalidArgument, "inproc: rank {} outside a world of {}", rank,
             fabric_->size());
}

void InprocTransport::check_peer(int peer, const char* what) const {
  SF_ENFORCE(peer >= 0 && peer < size(), InvalidArgument, "inproc {}: peer rank {} outside a world of {}", what, peer,
             size());
}

void InprocTransport::send(int peer, Tag tag, const Tensor& t) {
  check_peer(peer, "send");
  fabric_->post(rank_, peer, tag, t);
}

Tensor InprocTransport::recv(int peer, Tag tag, std::chrono::milliseconds timeout) {
  check_peer(peer, "recv");
  return fabric_->take(peer, rank_, tag, timeout);
}

}  // namespace sf::comm::inproc

namespace sf::comm {

std::vector<std::shared_ptr<Transport>> make_inproc_world(int n) {
  auto fabric = std::make_shared<inproc::Fabric>(n);
  std::vector<std::shared_ptr<Transport>> world;
  world.reserve(n);
  for (int r = 0; r < n; ++r) world.push_back(std::make_shared<inproc::InprocTransport>(fabric, r));
  return world;
}

}  // namespace sf::comm
