/// @file
/// InprocTransport: one rank's endpoint on an in-process Fabric — the default backend, used
/// by `--devices N` and by most tests. Tensors travel by reference (no copy); see the buffer
/// ownership contract in comm/transport.h.
///
/// Threading: as Transport. The endpoints of one world share the Fabric; each endpoint may be
/// used by several threads of its rank.
#pragma once

#include <memory>
#include <vector>

#include <shardflow/comm/inproc/fabric.h>
#include <shardflow/comm/transport.h>

namespace sf::comm::inproc {

/// One rank's endpoint of an in-process world (the Transport of `--devices N`).
class InprocTransport final : public Transport {
 public:
  /// Rank `rank`'s endpoint on `fabric`; make_inproc_world() makes them all.
  InprocTransport(std::shared_ptr<Fabric> fabric, int rank);

  int rank() const override { return rank_; }
  int size() const override { return fabric_->size(); }
  std::string_view name() const override { return "inproc"; }
  void send(int peer, Tag tag, const Tensor& t) override;
  Tensor recv(int peer, Tag tag, std::chrono::milliseconds timeout) override;
  void close() override { fabric_->close(rank_); }
  bool passes_by_reference() const override { return true; }

 private:
  void check_peer(int peer, const char* what) const;

  std::shared_ptr<Fabric> fabric_;
  int rank_;
};

}  // namespace sf::comm::inproc

namespace sf::comm {

/// A world of n virtual ranks in this process: element r is rank r's endpoint.
std::vector<std::shared_ptr<Transport>> make_inproc_world(int n);

}  // namespace sf::comm
