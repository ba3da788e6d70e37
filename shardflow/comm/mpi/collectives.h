// Collectives: the MPI side of the mpi backend's native collectives — one MPI
// communicator per group and MPI's non-blocking collectives on it (MPI_Iallreduce,
// MPI_Iallgather, MPI_Ireduce_scatter_block, MPI_Ibcast, MPI_Ialltoall), polled with MPI_Test
// in the fabric's step like its point-to-point requests, so nothing ever blocks in a
// collective and a caller's deadline still turns into PeerLost (comm/mpi/native_op.h).
//
// Communicators: the world group's is duplicated when the fabric starts. Any other group's is
// made on its first native collective with MPI_Comm_create_group, which blocks until every
// member has entered it. Two ranks creating two groups in opposite orders would deadlock, so
// creations follow one order for the whole job: each member tells world rank 0 (the
// sequencer) that it wants the group's communicator; once all members have, rank 0 grants it
// the next number and tells the members, and each rank creates communicators in the order its
// grants arrive (MPI keeps rank 0's messages to a rank in order). A rank enters the blocking
// call only when every member has asked for that communicator and has finished the earlier
// ones it shares, so it never waits long. Operations on a group wait, in order, until its
// communicator exists; the communicator is cached for the life of the fabric.
//
// Matching: MPI matches a communicator's collectives by their order, which is the order the
// ops arrive here — each caller starts its ops on its own thread, under the MPI lock, in its
// program order (comm/native_collectives.h).
//
// Large reductions run in chunks: Open MPI's Iallreduce mallocs a temporary buffer of the
// whole message per call, its Ireduce_scatter_block one of twice the whole input, and glibc
// serves blocks over 32 MiB with a fresh mmap every time — page faults (~11 µs per 4 KiB
// here) that cost more than the reduction (a 16 MiB ReduceScatter took 130 ms unchunked). So
// an AllReduce above kAllReduceChunkBytes runs as consecutive MPI_Iallreduce calls on slices
// of at most that size, and a ReduceScatter above kReduceScatterChunkBytes as consecutive
// MPI_Ireduce_scatter_block calls, each on the same slice of every block, packed into one
// pooled buffer. One chunk is in flight at a time, so the heap keeps one chunk's buffer;
// later ops on the group are issued after the last chunk, so every rank issues the same
// sequence of MPI calls. Chunking changes no result bit for a given size: every rank splits
// alike, and each element's reduction stays within its chunk.
//
// Open MPI's choice: its non-blocking AllReduce (the libnbc component) reduces 2-rank groups
// with a binomial tree — one rank sends everything, the other reduces and sends it all back —
// which took 1.5-1.9x as long as its ring at every size here (docs/benchmarks.md). So the
// ring is asked for around each MPI_Iallreduce on a 2-rank communicator, through the MPI tool
// interface's control variable coll_libnbc_iallreduce_algorithm (set, call, set back, so
// the program's own MPI calls see Open MPI's defaults). The choice depends on the group size
// alone, so every rank makes it alike. Without that variable (another MPI) nothing is set.
//
// Messages: on the fabric's duplicate of MPI_COMM_WORLD, with MPI tags the data path does not
// use: kWantTag (member -> rank 0: group id and world ranks), kGrantTag (rank 0 -> member:
// grant number, group id, world ranks), and kCreateTagBase + grant number for the creation.
//
// Threading: everything here runs under the fabric's MPI lock (comm/mpi/fabric.h), on
// whichever thread holds it.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include <shardflow/comm/mpi/native_op.h>

namespace sf::comm::mpi {

inline constexpr int kWantTag = 3;
inline constexpr int kGrantTag = 4;
inline constexpr int kCreateTagBase = 16;
inline constexpr int64_t kAllReduceChunkBytes = int64_t{16} << 20;
inline constexpr int64_t kReduceScatterChunkBytes = int64_t{8} << 20;  // of input, all blocks

class Collectives {
 public:
  // `comm` is the fabric's duplicate of MPI_COMM_WORLD (used for the sequencer's messages and
  // as the parent of group communicators); `tag_ub` is its MPI_TAG_UB. Duplicates it once
  // more for the world group (collective: every rank constructs one at start).
  Collectives(MPI_Comm comm, int rank, int size, int tag_ub);
  Collectives(const Collectives&) = delete;
  Collectives& operator=(const Collectives&) = delete;

  // Takes an op queued by a caller: starts it, or queues it behind its group's communicator.
  void submit(std::shared_ptr<NativeOp> op);
  // Polls the sequencer's messages, creates granted communicators, tests in-flight
  // collectives; true if anything moved.
  bool progress();
  // Tests in-flight collectives only (what a waiter polls most of the time); true if any
  // completed or moved to its next chunk.
  bool progress_inflight();
  // True while a collective is in flight or waiting for its communicator.
  bool busy() const { return !inflight_.empty() || waiting_ > 0; }
  // At shutdown, before MPI_Finalize: frees what can be freed. Collectives still in flight
  // (given up by their callers) cannot be cancelled in MPI: their communicators are left
  // alone. Returns how many there were.
  size_t finish();

 private:
  using Key = std::pair<uint32_t, std::vector<int>>;  // group id, world ranks in group order
  struct GroupComm {
    MPI_Comm comm = MPI_COMM_NULL;
    // Ops not yet issued: they came before the communicator, or while a chunked AllReduce
    // still had chunks to issue.
    std::deque<std::shared_ptr<NativeOp>> waiting;
    bool chunking = false;
  };
  struct InFlight {
    std::shared_ptr<NativeOp> op;
    MPI_Request request;
    GroupComm* group;
    int64_t next = -1;  // chunked: the first element (of each block) of the next chunk, else -1
    Tensor packed;      // chunked ReduceScatter: the pooled buffer a chunk is packed into
  };
  struct Send {  // a sequencer message, alive until MPI is done with it
    std::vector<int32_t> words;
    MPI_Request request;
  };

  void issue(GroupComm& g, std::shared_ptr<NativeOp> op);
  // Issues g's waiting ops in order, as far as a chunked AllReduce lets it.
  void drain(GroupComm& g);
  // Starts the chunk of `f` (AllReduce or ReduceScatter) at element `begin`; sets f.next.
  void issue_chunk(InFlight& f, int64_t begin);
  // Whether `q` runs in chunks.
  static bool chunked(const NativeRequest& q);
  void send_words(int dst, int tag, std::vector<int32_t> words);
  // Probes for one message under `tag`; false if none is there.
  bool take_words(int tag, int& src, std::vector<int32_t>& words);
  bool serve_wants();   // rank 0 only
  bool take_grants();
  void create(const Key& key, int32_t number);
  // MPI_Iallreduce with the algorithm choice above.
  void iallreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                  MPI_Request* req);

  MPI_Comm parent_;
  int rank_, tag_ub_;
  std::map<Key, GroupComm> groups_;
  std::map<Key, std::set<int>> wants_;  // rank 0: who has asked for each communicator
  int32_t next_grant_ = 0;              // rank 0
  std::list<InFlight> inflight_;
  std::list<Send> sends_;
  int waiting_ = 0;  // ops in groups_[..].waiting
  // coll_libnbc_iallreduce_algorithm, if this MPI has it, and its value before we touch it.
  MPI_T_cvar_handle allreduce_algorithm_ = MPI_T_CVAR_HANDLE_NULL;
  int allreduce_algorithm_default_ = 0;
  bool tool_interface_ = false;
};

}  // namespace sf::comm::mpi
