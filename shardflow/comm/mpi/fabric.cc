#include <shardflow/comm/mpi/fabric.h>

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <list>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/mpi/collectives.h>
#include <shardflow/comm/mpi/header.h>
#include <shardflow/core/error.h>

namespace sf::comm::mpi {

struct Fabric::Outgoing {
  int dst;
  MessageHeader header;
  Tensor t;                    // data messages: held until the payload has left
  std::vector<uint8_t> bytes;  // encoded header, alive while its send is in flight
  std::vector<MPI_Request> reqs;
};

struct Fabric::Incoming {
  MessageHeader header;
  Tensor t;  // pooled buffer the payload lands in
  std::vector<MPI_Request> reqs;
};

// The fabric's MPI state: MPI handles and in-flight requests. Touched only under the MPI lock.
class Fabric::Engine {
 public:
  explicit Engine(Fabric& f) : f_(f) {}

  // Initialises or attaches to MPI and publishes itself as f_.engine_; false (with
  // f_.start_error_ set) if MPI is unusable. Runs on the fabric's thread.
  bool start();
  // The fabric's thread: steps until shutdown has been requested and the linger is over,
  // then finishes (under the MPI lock, so no caller reaches MPI after MPI_Finalize).
  void loop();

  struct Progress {
    bool moved = false;              // something started, arrived or completed
    bool collective_pending = false; // a native collective in flight or waiting
  };
  // One step of MPI work (the MPI lock held).
  Progress step();
  // In-flight collectives only (the MPI lock held).
  void step_collectives() { collectives_->progress_inflight(); }
  // Starts the sends queued by post() (the MPI lock held).
  void start_queued();
  // Starts or queues a native collective (the MPI lock held).
  void submit(std::shared_ptr<NativeOp> op) { collectives_->submit(std::move(op)); }

 private:
  void start_send(std::unique_ptr<Outgoing> o);
  void start_batch();  // starts and empties batch_
  void send_close_notices();
  bool poll_headers();
  bool progress_sends();
  bool progress_receives();
  void post_pieces(void* data, size_t nbytes, int peer, bool send, std::vector<MPI_Request>& reqs);
  bool quiet() const;  // every peer closed, nothing in flight
  // Abandons what is still in flight, frees the communicator, finalises MPI if we own it.
  void finish();

  Fabric& f_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owns_mpi_ = false;
  bool shutdown_seen_ = false;
  std::chrono::steady_clock::time_point linger_end_{};
  int peers_closed_ = 0;
  std::vector<char> peer_closed_;  // close notice probed (sends to it are dropped)
  std::vector<char> peer_broken_;  // sent a malformed header: ignore it from then on
  std::vector<std::deque<std::unique_ptr<Incoming>>> incoming_;  // per source, in arrival order
  std::list<std::unique_ptr<Outgoing>> outgoing_;
  std::deque<std::unique_ptr<Outgoing>> batch_;  // taken from f_.outbox_ by a step
  std::unique_ptr<Collectives> collectives_;
};

bool Fabric::Engine::start() {
  auto fail = [&](std::string why) {
    std::lock_guard<std::mutex> lock(f_.mu_);
    f_.start_error_ = std::move(why);
    f_.started_ = true;
    f_.wake_.notify_all();
    return false;
  };
  int initialised = 0, finalised = 0, provided = 0;
  MPI_Finalized(&finalised);
  if (finalised) return fail("MPI has already been finalised in this process (MPI cannot be initialised twice)");
  MPI_Initialized(&initialised);
  if (!initialised) {
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    owns_mpi_ = true;
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      return fail("MPI_Init_thread provided no MPI_THREAD_SERIALIZED support; the mpi transport calls MPI from the "
                  "calling threads, one at a time");
    }
  } else {
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_SERIALIZED)
      return fail("MPI was initialised with a thread level below MPI_THREAD_SERIALIZED; the mpi transport calls MPI "
                  "from the calling threads, one at a time");
  }
  int* tag_ub = nullptr;
  int has_ub = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &has_ub);
  if (!has_ub || *tag_ub < kPayloadTag) {
    if (owns_mpi_) MPI_Finalize();
    return fail("MPI_TAG_UB is below the transport's two MPI tags");
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  int rank = 0, size = 0;
  MPI_Comm_rank(comm_, &rank);
  MPI_Comm_size(comm_, &size);
  collectives_ = std::make_unique<Collectives>(comm_, rank, size, *tag_ub);
  MPI_Comm node = MPI_COMM_NULL;
  int on_node = 1;
  MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &on_node);
  MPI_Comm_free(&node);
  peer_closed_.assign(size, 0);
  peer_broken_.assign(size, 0);
  incoming_.resize(size);
  std::lock_guard<std::mutex> mpi(f_.mpi_mu_);
  f_.engine_ = this;
  std::lock_guard<std::mutex> lock(f_.mu_);
  f_.crowded_ = on_node > static_cast<int>(std::thread::hardware_concurrency());
  f_.rank_ = rank;
  f_.size_ = size;
  f_.tag_ub_ = *tag_ub;
  for (int r = 0; r < size; ++r) f_.inboxes_.push_back(std::make_unique<detail::Inbox>("mpi", rank, r));
  f_.started_ = true;
  f_.wake_.notify_all();
  return true;
}

Fabric::Engine::Progress Fabric::Engine::step() {
  bool close_now = false;
  {
    std::lock_guard<std::mutex> lock(f_.mu_);
    batch_.swap(f_.outbox_);
    close_now = f_.close_requested_ && !f_.close_taken_;
    f_.close_taken_ |= close_now;
    if (f_.shutdown_ && !f_.shutdown_taken_) {
      f_.shutdown_taken_ = true;
      shutdown_seen_ = true;
      linger_end_ = std::chrono::steady_clock::now() + kLinger;
    }
  }
  Progress p;
  p.moved = !batch_.empty() || close_now;
  start_batch();  // messages posted before close() go first
  if (close_now) send_close_notices();
  p.moved |= poll_headers();
  p.moved |= progress_sends();
  p.moved |= progress_receives();
  p.moved |= collectives_->progress();
  p.collective_pending = collectives_->busy();
  return p;
}

void Fabric::Engine::start_queued() {
  {
    std::lock_guard<std::mutex> lock(f_.mu_);
    batch_.swap(f_.outbox_);
  }
  start_batch();
}

void Fabric::Engine::start_batch() {
  for (auto& o : batch_) start_send(std::move(o));
  batch_.clear();  // keeps its memory: the two deques trade places on every step
}

void Fabric::Engine::loop() {
  int idle = 0;
  for (;;) {
    Progress p;
    {
      // try_lock: a caller in MPI is making the progress; waiting for it would only cost a
      // futex wake on its every unlock.
      std::unique_lock<std::mutex> mpi(f_.mpi_mu_, std::try_to_lock);
      if (mpi.owns_lock()) {
        p = step();
        if (shutdown_seen_ && (quiet() || std::chrono::steady_clock::now() >= linger_end_)) {
          f_.engine_ = nullptr;
          finish();
          return;
        }
      }
    }
    // A collective in flight that no caller is polling: the thread polls it. While a caller
    // polls, the thread sleeps: yielding would hand the rank's core (mpirun binds all its
    // threads to one) back and forth with the poller.
    const bool driven = f_.drivers_.load(std::memory_order_relaxed) > 0;
    const bool poll = p.collective_pending && !driven;
    if (driven && !p.moved) idle = std::max(idle, 64);
    if (p.moved) {
      idle = 0;
    } else if (poll && !f_.crowded_) {
      // A core for each rank: poll on without giving the core away (a yield hands it to
      // whatever else runs on the host, for a whole time slice).
      __builtin_ia32_pause();
    } else if (++idle < 64 || poll) {  // crowded: poll, but let the others run
      std::this_thread::yield();
    } else {  // back off: 20 us doubling to 1 ms, woken at once by new work
      const auto pause = std::chrono::microseconds(std::min(1000, 20 << std::min(idle - 64, 6)));
      std::unique_lock<std::mutex> lock(f_.mu_);
      f_.wake_.wait_for(lock, pause, [&] {
        return !f_.outbox_.empty() || (f_.close_requested_ && !f_.close_taken_) || (f_.shutdown_ && !f_.shutdown_taken_);
      });
    }
  }
}

bool Fabric::Engine::quiet() const {
  if (!outgoing_.empty() || peers_closed_ < f_.size_ - 1) return false;
  return std::all_of(incoming_.begin(), incoming_.end(), [](const auto& q) { return q.empty(); });
}

void Fabric::Engine::post_pieces(void* data, size_t nbytes, int peer, bool send, std::vector<MPI_Request>& reqs) {
  for (size_t off = 0; off < nbytes; off += kMaxPieceBytes) {
    const int len = static_cast<int>(std::min(kMaxPieceBytes, nbytes - off));
    MPI_Request req;
    char* p = static_cast<char*>(data) + off;
    if (send)
      MPI_Isend(p, len, MPI_BYTE, peer, kPayloadTag, comm_, &req);
    else
      MPI_Irecv(p, len, MPI_BYTE, peer, kPayloadTag, comm_, &req);
    reqs.push_back(req);
  }
}

void Fabric::Engine::start_send(std::unique_ptr<Outgoing> o) {
  // Data for a peer that has closed is dropped (the sender's reference given back). Close
  // notices always go: the peer lingers until it has one from every rank.
  if (o->header.kind == MessageKind::kData && peer_closed_[o->dst]) {
    BufferPool::global().release(o->t);
    return;
  }
  o->bytes = encode_header(o->header);
  MPI_Request req;
  MPI_Isend(o->bytes.data(), static_cast<int>(o->bytes.size()), MPI_BYTE, o->dst, kHeaderTag, comm_, &req);
  o->reqs.push_back(req);
  if (o->t.defined() && o->t.nbytes() > 0) post_pieces(const_cast<void*>(o->t.raw()), o->t.nbytes(), o->dst, true, o->reqs);
  outgoing_.push_back(std::move(o));
}

void Fabric::Engine::send_close_notices() {
  for (int peer = 0; peer < f_.size_; ++peer) {
    if (peer == f_.rank_) continue;
    auto o = std::make_unique<Outgoing>();
    o->dst = peer;
    o->header.kind = MessageKind::kClose;
    start_send(std::move(o));
  }
}

bool Fabric::Engine::poll_headers() {
  bool any = false;
  for (int k = 0; k < 64; ++k) {
    int flag = 0, n = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kHeaderTag, comm_, &flag, &st);
    if (!flag) break;
    any = true;
    const int src = st.MPI_SOURCE;
    MPI_Get_count(&st, MPI_BYTE, &n);
    std::vector<uint8_t> bytes(static_cast<size_t>(n));
    MPI_Recv(bytes.data(), n, MPI_BYTE, src, kHeaderTag, comm_, MPI_STATUS_IGNORE);
    if (peer_broken_[src]) continue;
    auto in = std::make_unique<Incoming>();
    try {
      in->header = decode_header(bytes.data(), bytes.size());
    } catch (const IoError& e) {  // its payloads can no longer be paired: treat the peer as lost
      std::fprintf(stderr, "shardflow mpi: rank %d: dropping rank %d: %s\n", f_.rank_, src, e.what());
      peer_broken_[src] = 1;
      ++peers_closed_;
      f_.mark_src_closed(src, fmt::format("sent a malformed header ({})", e.what()));
      continue;
    }
    if (in->header.kind == MessageKind::kClose) {
      peer_closed_[src] = 1;
      ++peers_closed_;
    } else {
      in->t = BufferPool::global().acquire(in->header.dtype, in->header.numel()).view(in->header.shape);
      post_pieces(in->t.raw(), in->header.payload_bytes(), src, false, in->reqs);
    }
    incoming_[src].push_back(std::move(in));
  }
  return any;
}

bool Fabric::Engine::progress_sends() {
  bool any = false;
  for (auto it = outgoing_.begin(); it != outgoing_.end();) {
    int done = 0;
    MPI_Testall(static_cast<int>((*it)->reqs.size()), (*it)->reqs.data(), &done, MPI_STATUSES_IGNORE);
    if (!done) {
      ++it;
      continue;
    }
    BufferPool::global().release((*it)->t);  // the bytes have left
    it = outgoing_.erase(it);
    any = true;
  }
  return any;
}

bool Fabric::Engine::progress_receives() {
  bool any = false;
  for (int src = 0; src < f_.size_; ++src) {
    auto& q = incoming_[src];
    while (!q.empty()) {  // deliver in arrival order, so each (src, tag) queue stays FIFO
      Incoming& in = *q.front();
      int done = 1;
      if (!in.reqs.empty()) MPI_Testall(static_cast<int>(in.reqs.size()), in.reqs.data(), &done, MPI_STATUSES_IGNORE);
      if (!done) break;
      if (in.header.kind == MessageKind::kClose)
        f_.mark_src_closed(src, "closed its endpoint");
      else
        f_.deliver(src, in.header.tag, std::move(in.t));
      q.pop_front();
      any = true;
    }
  }
  return any;
}

void Fabric::Engine::finish() {
  std::vector<Tensor> abandoned;  // sends still in flight: their memory must outlive MPI
  for (auto& q : incoming_)
    for (auto& in : q)
      for (MPI_Request& r : in->reqs)
        if (r != MPI_REQUEST_NULL) {
          MPI_Cancel(&r);
          MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
  for (auto& o : outgoing_) {
    for (MPI_Request& r : o->reqs)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    abandoned.push_back(std::move(o->t));
  }
  if (!outgoing_.empty())
    std::fprintf(stderr, "shardflow mpi: rank %d: %zu messages still unsent after %lld s at shutdown\n", f_.rank_,
                 outgoing_.size(), static_cast<long long>(kLinger.count()));
  if (const size_t given_up = collectives_->finish())
    std::fprintf(stderr, "shardflow mpi: rank %d: %zu given-up collectives still in MPI at shutdown\n", f_.rank_,
                 given_up);
  MPI_Comm_free(&comm_);
  if (owns_mpi_) MPI_Finalize();
  for (auto& q : incoming_)
    for (auto& in : q) BufferPool::global().release(in->t);
  for (const Tensor& t : abandoned) BufferPool::global().release(t);
}

// ---- Fabric ----

Fabric::Fabric() {
  thread_ = std::thread([this] { run(); });
  std::unique_lock<std::mutex> lock(mu_);
  wake_.wait(lock, [&] { return started_; });
  if (!start_error_.empty()) {
    lock.unlock();
    thread_.join();
    SF_THROW(Error, "mpi: {}", start_error_);
  }
}

Fabric::~Fabric() { finish(); }

void Fabric::finish() {
  close();
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Fabric::run() {
  Engine e(*this);
  if (!e.start()) return;
  e.loop();
}

void Fabric::post(int dst, Tag tag, const Tensor& t) {
  bool queued = false;
  if (!closed_.load()) {
    auto o = std::make_unique<Outgoing>();
    o->dst = dst;
    o->header.tag = tag;
    o->header.dtype = t.dtype();
    o->header.shape = t.shape();
    o->t = t;
    std::lock_guard<std::mutex> lock(mu_);
    if (!close_requested_) {
      outbox_.push_back(std::move(o));
      queued = true;
    }
  }
  if (!queued) {
    BufferPool::global().release(t);  // dropped: give the sender's reference back
    return;
  }
  // Start it here if MPI is free (the queue keeps the order of posts from other threads);
  // otherwise the MPI lock's holder or the woken thread starts it.
  {
    std::unique_lock<std::mutex> mpi(mpi_mu_, std::try_to_lock);
    if (mpi.owns_lock() && engine_) {
      engine_->start_queued();
      return;
    }
  }
  wake_.notify_all();
}

void Fabric::start_native(std::shared_ptr<NativeOp> op) {
  std::lock_guard<std::mutex> mpi(mpi_mu_);
  if (engine_) engine_->submit(std::move(op));
}

bool Fabric::progress(Scope scope) {
  std::unique_lock<std::mutex> mpi(mpi_mu_, std::try_to_lock);
  if (!mpi.owns_lock()) return false;
  if (!engine_) return true;
  if (scope == Scope::kCollectives)
    engine_->step_collectives();
  else
    engine_->step();
  return true;
}

bool Fabric::drive(const std::function<bool()>& done, Scope scope, std::chrono::steady_clock::time_point until,
                   std::chrono::steady_clock::time_point spin_until) {
  drivers_.fetch_add(1, std::memory_order_relaxed);
  bool ok = false;
  for (unsigned poll = 0;; ++poll) {
    progress(poll % kFullStepEvery == kFullStepEvery - 1 ? Scope::kAll : scope);
    if ((ok = done())) break;
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) break;
    if (crowded_ || now >= spin_until)
      std::this_thread::yield();
    else
      __builtin_ia32_pause();
  }
  drivers_.fetch_sub(1, std::memory_order_relaxed);
  return ok;
}

uint64_t Fabric::peer_closed(int src) const { return inboxes_[src]->closed_order(); }

void Fabric::deliver(int src, Tag tag, Tensor t) { inboxes_[src]->push(tag, std::move(t)); }

void Fabric::mark_src_closed(int src, std::string why) {
  if (inboxes_[src]->close_source(std::move(why), closures_ + 1)) ++closures_;
}

Tensor Fabric::take(int src, Tag tag, std::chrono::milliseconds timeout) {
  const auto now = std::chrono::steady_clock::now();
  const auto deadline = now + timeout;
  detail::Inbox& box = *inboxes_[src];
  if (!box.ready(tag)) drive([&] { return box.ready(tag); }, Scope::kAll, std::min(deadline, now + kReceivePoll), now + kSpin);
  return *box.take(tag, deadline, deadline, timeout);  // a message or PeerLost
}

void Fabric::close() {
  if (closed_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    close_requested_ = true;
  }
  wake_.notify_all();
  for (auto& b : inboxes_) b->close_endpoint();  // wake receivers; drop what nobody will read now
}

}  // namespace sf::comm::mpi
