#include <shardflow/comm/mpi/collectives.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/core/error.h>

namespace sf::comm::mpi {

namespace {

// i32 sum and product wrap modulo 2^32 (comm/reduce_op.h): MPI's unsigned arithmetic gives
// those bits with defined behaviour; max and min need the signed type.
MPI_Datatype type_of(DType dtype, Collective c, ReduceOp op) {
  if (dtype == DType::kF32) return MPI_FLOAT;
  const bool reduces = c == Collective::kAllReduce || c == Collective::kReduceScatter;
  return reduces && (op == ReduceOp::kSum || op == ReduceOp::kProd) ? MPI_UINT32_T : MPI_INT32_T;
}

MPI_Op op_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kProd: return MPI_PROD;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kMin: return MPI_MIN;
  }
  return MPI_OP_NULL;
}

int count_of(int64_t n) { return static_cast<int>(n); }  // supports() bounds every count

// Values of coll_libnbc_iallreduce_algorithm (Open MPI 4.1: 0 its own choice, 1 ring).
constexpr int kLibnbcRing = 1;

}  // namespace

Collectives::Collectives(MPI_Comm comm, int rank, int size, int tag_ub)
    : parent_(comm), rank_(rank), tag_ub_(tag_ub) {
  Key world{0, {}};
  for (int r = 0; r < size; ++r) world.second.push_back(r);
  MPI_Comm_dup(comm, &groups_[world].comm);
  int provided = 0, index = 0, count = 0;
  if (MPI_T_init_thread(MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) return;
  tool_interface_ = true;
  MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
  if (MPI_T_cvar_get_index("coll_libnbc_iallreduce_algorithm", &index) != MPI_SUCCESS ||
      MPI_T_cvar_handle_alloc(index, nullptr, &h, &count) != MPI_SUCCESS)
    return;
  if (count == 1 && MPI_T_cvar_read(h, &allreduce_algorithm_default_) == MPI_SUCCESS)
    allreduce_algorithm_ = h;
  else
    MPI_T_cvar_handle_free(&h);
}

void Collectives::iallreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                             MPI_Request* req) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  int ring = kLibnbcRing;
  const bool set = n == 2 && allreduce_algorithm_ != MPI_T_CVAR_HANDLE_NULL &&
                   MPI_T_cvar_write(allreduce_algorithm_, &ring) == MPI_SUCCESS;
  MPI_Iallreduce(in, out, count, type, op, comm, req);
  if (set) MPI_T_cvar_write(allreduce_algorithm_, &allreduce_algorithm_default_);
}

void Collectives::submit(std::shared_ptr<NativeOp> op) {
  Key key{op->group_id, op->world_ranks};
  auto [it, fresh] = groups_.try_emplace(key);
  GroupComm& g = it->second;
  if (g.comm != MPI_COMM_NULL && g.waiting.empty() && !g.chunking) {
    issue(g, std::move(op));
    return;
  }
  if (fresh) {  // ask the sequencer: group id, then the world ranks
    std::vector<int32_t> words{static_cast<int32_t>(key.first)};
    words.insert(words.end(), key.second.begin(), key.second.end());
    send_words(0, kWantTag, std::move(words));
  }
  g.waiting.push_back(std::move(op));
  ++waiting_;
}

void Collectives::drain(GroupComm& g) {
  while (g.comm != MPI_COMM_NULL && !g.chunking && !g.waiting.empty()) {
    std::shared_ptr<NativeOp> op = std::move(g.waiting.front());
    g.waiting.pop_front();
    --waiting_;
    issue(g, std::move(op));
  }
}

bool Collectives::chunked(const NativeRequest& q) {
  const auto bytes = static_cast<int64_t>(q.input.nbytes());
  return (q.collective == Collective::kAllReduce && bytes > kAllReduceChunkBytes) ||
         (q.collective == Collective::kReduceScatter && bytes > kReduceScatterChunkBytes);
}

void Collectives::issue_chunk(InFlight& f, int64_t begin) {
  const NativeRequest& q = f.op->req;
  Tensor out = q.output;
  const auto w = static_cast<int64_t>(dtype_size(q.input.dtype()));
  const MPI_Datatype type = type_of(q.input.dtype(), q.collective, q.op);
  const auto* in = static_cast<const std::byte*>(q.input.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  int64_t end = 0;
  if (q.collective == Collective::kAllReduce) {
    end = std::min(q.input.numel(), begin + kAllReduceChunkBytes / w);
    iallreduce(in + begin * w, dst + begin * w, count_of(end - begin), type, op_of(q.op), f.group->comm, &f.request);
  } else {  // ReduceScatter: slice [begin, end) of each of the n blocks of m elements
    const int64_t m = out.numel(), n = q.input.numel() / m;
    end = std::min(m, begin + kReduceScatterChunkBytes / w / n);
    const int64_t len = end - begin;
    if (!f.packed.defined()) f.packed = BufferPool::global().acquire(q.input.dtype(), n * std::min(m, len));
    auto* packed = static_cast<std::byte*>(f.packed.raw());
    for (int64_t j = 0; j < n; ++j) std::memcpy(packed + j * len * w, in + (j * m + begin) * w, len * w);
    MPI_Ireduce_scatter_block(packed, dst + begin * w, count_of(len), type, op_of(q.op), f.group->comm, &f.request);
    end = begin + len;
  }
  const int64_t total = q.collective == Collective::kAllReduce ? q.input.numel() : out.numel();
  f.next = end < total ? end : -1;
  f.group->chunking = f.next >= 0;
}

void Collectives::issue(GroupComm& g, std::shared_ptr<NativeOp> op) {
  const MPI_Comm comm = g.comm;
  const NativeRequest& q = op->req;
  if (chunked(q)) {
    InFlight& f = inflight_.emplace_back(InFlight{std::move(op), MPI_REQUEST_NULL, &g, -1, Tensor()});
    issue_chunk(f, 0);
    return;
  }
  Tensor out = q.output;  // a non-const handle on the output's storage
  const DType dt = q.input.dtype();
  const MPI_Datatype type = type_of(dt, q.collective, q.op);
  int n = 0;
  MPI_Comm_size(comm, &n);
  MPI_Request req = MPI_REQUEST_NULL;
  switch (q.collective) {
    case Collective::kAllReduce:
      iallreduce(q.input.raw(), out.raw(), count_of(q.input.numel()), type, op_of(q.op), comm, &req);
      break;
    case Collective::kAllGather:
      MPI_Iallgather(q.input.raw(), count_of(q.input.numel()), type, out.raw(), count_of(q.input.numel()), type, comm,
                     &req);
      break;
    case Collective::kReduceScatter:
      MPI_Ireduce_scatter_block(q.input.raw(), out.raw(), count_of(out.numel()), type, op_of(q.op), comm, &req);
      break;
    case Collective::kBroadcast: {
      int me = 0;
      MPI_Comm_rank(comm, &me);
      // The root sends from its input, which MPI only reads there; the others receive.
      void* buf = me == q.root ? const_cast<void*>(q.input.raw()) : out.raw();
      MPI_Ibcast(buf, count_of(q.input.numel()), type, q.root, comm, &req);
      break;
    }
    case Collective::kAllToAll:
      MPI_Ialltoall(q.input.raw(), count_of(q.input.numel() / n), type, out.raw(), count_of(q.input.numel() / n), type,
                    comm, &req);
      break;
    case Collective::kBarrier: break;  // never native (comm/algorithm.cc)
  }
  if (req == MPI_REQUEST_NULL) {
    op->complete();
    return;
  }
  inflight_.push_back({std::move(op), req, &g, -1, Tensor()});
}

void Collectives::send_words(int dst, int tag, std::vector<int32_t> words) {
  Send& s = sends_.emplace_back();
  s.words = std::move(words);
  MPI_Isend(s.words.data(), static_cast<int>(s.words.size()), MPI_INT32_T, dst, tag, parent_, &s.request);
}

bool Collectives::take_words(int tag, int& src, std::vector<int32_t>& words) {
  int flag = 0, n = 0;
  MPI_Status st;
  MPI_Iprobe(tag == kWantTag ? MPI_ANY_SOURCE : 0, tag, parent_, &flag, &st);
  if (!flag) return false;
  MPI_Get_count(&st, MPI_INT32_T, &n);
  words.resize(static_cast<size_t>(n));
  src = st.MPI_SOURCE;
  MPI_Recv(words.data(), n, MPI_INT32_T, src, tag, parent_, MPI_STATUS_IGNORE);
  return true;
}

bool Collectives::serve_wants() {
  bool any = false;
  int src = 0;
  std::vector<int32_t> w;
  while (take_words(kWantTag, src, w)) {
    any = true;
    if (w.empty()) continue;
    Key key{static_cast<uint32_t>(w[0]), std::vector<int>(w.begin() + 1, w.end())};
    std::set<int>& asked = wants_[key];
    asked.insert(src);
    if (asked.size() < key.second.size()) continue;
    // Every member has asked: the next number, to each member in the same order as all others.
    std::vector<int32_t> grant{next_grant_++};
    grant.insert(grant.end(), w.begin(), w.end());
    for (int member : key.second) send_words(member, kGrantTag, grant);
    wants_.erase(key);
  }
  return any;
}

bool Collectives::take_grants() {
  bool any = false;
  int src = 0;
  std::vector<int32_t> w;
  while (take_words(kGrantTag, src, w)) {
    any = true;
    if (w.size() < 2) continue;
    create({static_cast<uint32_t>(w[1]), std::vector<int>(w.begin() + 2, w.end())}, w[0]);
  }
  return any;
}

void Collectives::create(const Key& key, int32_t number) {
  auto it = groups_.find(key);
  if (it == groups_.end() || it->second.comm != MPI_COMM_NULL) return;  // not ours, or made already
  GroupComm& g = it->second;
  MPI_Group world_group, members;
  MPI_Comm_group(parent_, &world_group);
  MPI_Group_incl(world_group, static_cast<int>(key.second.size()), key.second.data(), &members);
  const int tag = kCreateTagBase + number % (tag_ub_ - kCreateTagBase);
  MPI_Comm_create_group(parent_, members, tag, &g.comm);
  MPI_Group_free(&members);
  MPI_Group_free(&world_group);
  drain(g);
}

bool Collectives::progress() {
  bool any = false;
  if (rank_ == 0) any |= serve_wants();
  any |= take_grants();
  return progress_inflight() || any;
}

bool Collectives::progress_inflight() {
  bool any = false;
  for (auto it = inflight_.begin(); it != inflight_.end();) {
    int done = 0;
    MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    if (!done) {
      ++it;
      continue;
    }
    any = true;
    if (it->next >= 0) {  // a chunked op: on to the next chunk; its group may go on after the last
      issue_chunk(*it, it->next);
      if (!it->group->chunking) drain(*it->group);
      ++it;
      continue;
    }
    BufferPool::global().release(it->packed);
    it->op->complete();
    it = inflight_.erase(it);
  }
  for (auto it = sends_.begin(); it != sends_.end();) {
    int done = 0;
    MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    it = done ? sends_.erase(it) : std::next(it);
  }
  return any;
}

size_t Collectives::finish() {
  for (Send& s : sends_) MPI_Request_free(&s.request);
  sends_.clear();
  std::set<MPI_Comm> busy_comms;
  for (const InFlight& f : inflight_) busy_comms.insert(f.group->comm);
  for (auto& [key, g] : groups_)
    if (g.comm != MPI_COMM_NULL && !busy_comms.count(g.comm)) MPI_Comm_free(&g.comm);
  if (allreduce_algorithm_ != MPI_T_CVAR_HANDLE_NULL) MPI_T_cvar_handle_free(&allreduce_algorithm_);
  if (tool_interface_) MPI_T_finalize();
  return inflight_.size();
}

}  // namespace sf::comm::mpi
