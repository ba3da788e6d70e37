// MpiTransport: this process's endpoint in an Open MPI job — one rank per process, rank and
// size from MPI_COMM_WORLD, so a program started with `mpirun -np N` gets an N-rank world.
// Tensors are copied onto the wire (header + raw payload, comm/mpi/header.h); see the buffer
// ownership contract in comm/transport.h for what that means for pooled buffers.
//
// make_mpi_world() is collective: every rank of the job must call it (it duplicates
// MPI_COMM_WORLD). It returns the same endpoint for as long as one is alive; the first call
// initialises MPI unless the program already did, and destroying the last handle finalises it
// (comm/mpi/fabric.h), after which MPI cannot be used again in this process.
//
// Native collectives: the transport is its own NativeCollectives (comm/native_collectives.h):
// AllReduce, AllGather, ReduceScatter, Broadcast and AlltoAll of up to INT_MAX elements per
// MPI count go to MPI's non-blocking collectives, started and polled on the caller's thread
// (comm/mpi/collectives.h), which the algorithm table prefers on this transport (but for
// ReduceScatter from 64 KiB, prefers()).
//
// Threading: as Transport. MPI is called under the fabric's MPI lock (comm/mpi/fabric.h).
#pragma once

#include <memory>

#include <shardflow/comm/mpi/fabric.h>
#include <shardflow/comm/native_collectives.h>
#include <shardflow/comm/transport.h>

namespace sf::comm::mpi {

class MpiTransport final : public Transport, public NativeCollectives {
 public:
  explicit MpiTransport(std::unique_ptr<Fabric> fabric) : fabric_(std::move(fabric)) {}

  int rank() const override { return fabric_->rank(); }
  int size() const override { return fabric_->size(); }
  std::string_view name() const override { return "mpi"; }
  void send(int peer, Tag tag, const Tensor& t) override;
  Tensor recv(int peer, Tag tag, std::chrono::milliseconds timeout) override;
  void close() override { fabric_->close(); }
  void finish() override { fabric_->finish(); }
  NativeCollectives* native_collectives() override { return this; }

  bool supports(Collective c, int64_t count) const override;
  // All but ReduceScatter of 16 Ki elements (64 KiB) or more (comm/algorithm.h says why).
  bool prefers(Collective c, int64_t count) const override;
  std::unique_ptr<NativeOperation> start(uint32_t group_id, const std::vector<int>& world_ranks,
                                         NativeRequest req) override;

 private:
  void check_peer(int peer, const char* what) const;

  std::unique_ptr<Fabric> fabric_;
};

}  // namespace sf::comm::mpi

namespace sf::comm {

// This process's endpoint of the MPI job (see above). Throws Error if MPI cannot be used.
std::shared_ptr<Transport> make_mpi_world();

}  // namespace sf::comm
