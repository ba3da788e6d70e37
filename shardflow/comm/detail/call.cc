#include <shardflow/comm/detail/call.h>

#include <shardflow/comm/detail/blocks.h>

#include <algorithm>

#include <cstdio>
#include <exception>
#include <set>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/debug.h>
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/core/fault_point.h>

namespace sf::comm::detail {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::chrono::milliseconds notice_grace(milliseconds timeout) {
  return std::min<milliseconds>(std::max<milliseconds>(timeout / 2, milliseconds(1)), milliseconds(5000));
}

void check_group(std::string_view op, const Group& group) {
  SF_ENFORCE(group.defined(), InvalidArgument,
             "{}: options.group is not set and no rank is bound to this thread (call sf::comm::init, or pass a "
             "group from world_group or create_group)",
             op);
}

void check_common(std::string_view op, const Group& group, milliseconds timeout) {
  check_group(op, group);
  SF_ENFORCE(timeout.count() > 0, InvalidArgument, "{} (group '{}'): timeout {} ms must be positive", op, group.name(),
             timeout.count());
}

void check_input(std::string_view op, const Tensor& input) {
  SF_ENFORCE(input.defined(), InvalidArgument, "{}: the input tensor is undefined", op);
}

Call::Call(Signature sig, const Group& group, uint32_t seq, milliseconds timeout)
    : op_(sig.op), group_(group), seq_(seq), timeout_(timeout), deadline_(Clock::now() + timeout) {
  group_.flight_recorder().begin(seq_, sig.describe());
  try {
    group_.throw_if_failed([this] { return where(); });
    if (debug_checks() && size() > 1) check_signature(sig);
  } catch (const std::exception& e) {
    group_.flight_recorder().end(seq_, FlightRecord::State::kFailed, e.what());
    throw;
  }
  uncaught_ = std::uncaught_exceptions();
}

Call::~Call() {
  if (std::uncaught_exceptions() > uncaught_)
    group_.flight_recorder().end(seq_, FlightRecord::State::kFailed, error_.empty() ? "error" : error_);
  else
    group_.flight_recorder().end(seq_, FlightRecord::State::kDone);
}

void Call::check_signature(const Signature& mine) {
  const Tensor wire = mine.encode();  // read-only: one tensor serves every member
  for (int q = 0; q < size(); ++q)
    if (q != rank()) send(q, wire, kSignatureSlot);
  std::vector<Signature> all(size());
  all[rank()] = mine;
  bool agree = true;
  for (int q = 0; q < size(); ++q) {
    if (q == rank()) continue;
    Tensor got = recv(q, kSignatureSlot);
    try {
      all[q] = Signature::decode(got);
    } catch (const InvalidArgument& e) {
      BufferPool::global().release(got);
      SF_THROW(InvalidArgument, "{}: rank {} sent a malformed signature: {}", where(), group_.world_rank(q), e.what());
    }
    BufferPool::global().release(got);
    agree = agree && all[q].matches(mine);
  }
  // Every rank has the same list, so every rank throws the same message.
  SF_ENFORCE(agree, InvalidArgument, "{} (group '{}', seq {}): ranks disagree on the call: {}", op_, group_.name(), seq_,
             describe_mismatch(all, group_.world_ranks()));
}

std::string Call::where() const {
  return fmt::format("{} (group '{}', seq {}, rank {})", op_, group_.name(), seq_, group_.rank());
}

int64_t Call::segment_elems(DType dtype) const {
  return detail::segment_elems(dtype, group_.transport().segment_bytes());
}

void Call::send(int peer, const Tensor& t, uint8_t slot) {
  fault_point("collective");
  group_.transport().send(group_.world_rank(peer), collective_tag(group_.id(), seq_, slot), t);
}

Tensor Call::recv(int peer, uint8_t slot) {
  const int world_peer = group_.world_rank(peer);
  // Rounded up, so that a receive that times out has reached deadline_ (see the catch below).
  const auto left = std::chrono::ceil<milliseconds>(deadline_ - Clock::now());
  try {
    return group_.transport().recv(world_peer, collective_tag(group_.id(), seq_, slot),
                                   std::max(left, milliseconds(0)));
  } catch (const PeerLost& e) {
    if (Clock::now() >= deadline_) fail_after_timeout(peer);
    // The transport saw the peer close: it is the one lost. Tell the others, who may be
    // waiting for this rank, before leaving.
    send_notices(peer);
    announce_stuck(peer);
    std::string msg = fmt::format("{}: lost rank {}: {}", where(), world_peer, e.what());
    group_.mark_failed(world_peer, msg);
    error_ = msg;
    throw PeerLost(world_peer, msg, SF_WHERE);
  }
}

namespace {

// The tag of a group's "stuck, waiting for rank p" notice: a sequence number no call uses.
Tag stuck_tag(const Group& g) { return collective_tag(g.id(), 0xffffffffu, kNoticeSlot); }

// Sends "waiting for group rank `peer`" under `tag` to every other member. The notice is
// read-only, so one (unpooled) tensor serves every member.
void notify_members(const Group& g, Tag tag, int peer) {
  const Tensor notice = Tensor::from_vector({1}, std::vector<int32_t>{peer});
  for (int q = 0; q < g.size(); ++q)
    if (q != g.rank()) g.transport().send(g.world_rank(q), tag, notice);
}

}  // namespace

void Call::send_notices(int peer) { notify_members(group_, collective_tag(group_.id(), seq_, kNoticeSlot), peer); }

void Call::announce_stuck(int peer) { notify_members(group_, stuck_tag(group_), peer); }

void Call::fail_after_timeout(int peer) {
  Transport& tr = group_.transport();
  const Tag notice_tag = collective_tag(group_.id(), seq_, kNoticeSlot);
  const int n = size();
  send_notices(peer);
  announce_stuck(peer);
  // Collect the others' notices until the grace period ends.
  std::vector<int> waits_for(n, -1);
  std::vector<bool> lost(n, false);
  const auto grace_end = Clock::now() + notice_grace(timeout_);
  for (int q = 0; q < n; ++q) {
    if (q == rank()) continue;
    try {
      auto left = std::max(std::chrono::duration_cast<milliseconds>(grace_end - Clock::now()), milliseconds(0));
      waits_for[q] = static_cast<int>(tr.recv(group_.world_rank(q), notice_tag, left).item());
    } catch (const PeerLost&) {
      lost[q] = true;
    }
  }
  // A member silent in this call may be stuck in an earlier call of this group; it said
  // whom it waits for there when its own deadline passed.
  for (int q = 0; q < n; ++q) {
    if (!lost[q]) continue;
    try {
      waits_for[q] = static_cast<int>(tr.recv(group_.world_rank(q), stuck_tag(group_), milliseconds(0)).item());
      lost[q] = false;
    } catch (const PeerLost&) {
    }
  }
  // Follow "waits for" from the peer this rank waited on to the first lost rank.
  int culprit = peer;
  std::set<int> seen;
  for (int cur = peer; seen.insert(cur).second;) {
    if (lost[cur]) {
      culprit = cur;
      break;
    }
    if (waits_for[cur] < 0 || waits_for[cur] >= n) break;
    cur = waits_for[cur];
  }
  const int world_culprit = group_.world_rank(culprit);
  std::vector<int> lost_world;
  for (int q = 0; q < n; ++q)
    if (lost[q]) lost_world.push_back(group_.world_rank(q));
  std::string msg = fmt::format(
      "{}: rank {} did not take part within {} ms (this rank waited for rank {}; silent ranks: {})", where(),
      world_culprit, timeout_.count(), group_.world_rank(peer), brief_list(lost_world));
  group_.mark_failed(world_culprit, msg);
  error_ = msg;
  group_.flight_recorder().end(seq_, FlightRecord::State::kFailed, msg);
  std::fprintf(stderr, "%s",
               group_.flight_recorder()
                   .dump(fmt::format("shardflow comm: rank {}: {} timed out; flight recorder of group '{}'",
                                     group_.transport().rank(), op_, group_.name()))
                   .c_str());
  throw PeerLost(world_culprit, msg, SF_WHERE);
}

}  // namespace sf::comm::detail
