#include <shardflow/comm/membership.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <string>
#include <thread>

#include <fmt/format.h>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/text_tensor.h>
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::comm {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr uint8_t kProposalSlot = 0;
constexpr uint8_t kAddressSlot = 1;
constexpr uint8_t kJoinerSlot = 2;
// A round's waits look at the transport's losses this often.
constexpr milliseconds kSlice{20};
constexpr uint32_t kMaxRounds = 64;

// A proposal on the wire (i32, the steps split in halves): round, step high, step low, joiners
// admitted, then the lost ranks.
Tensor encode_proposal(uint32_t round, int64_t step, int joiners, const std::set<int>& lost) {
  std::vector<int32_t> v{static_cast<int32_t>(round), static_cast<int32_t>(step >> 32),
                         static_cast<int32_t>(step & 0xffffffff), joiners};
  v.insert(v.end(), lost.begin(), lost.end());
  return Tensor::from_vector({static_cast<int64_t>(v.size())}, v);
}

struct Proposal {
  int64_t step = 0;
  int joiners = 0;
  std::set<int> lost;
};

// Refuses what no survivor sends: another round, or ranks outside the world.
Proposal decode_proposal(const Tensor& t, uint32_t round, int from, int size) {
  const int64_t n = t.numel();
  SF_ENFORCE(t.dtype() == DType::kI32 && t.shape().size() == 1 && n >= 4 && t.i32()[0] == static_cast<int32_t>(round) &&
                 (t.i32()[3] == 0 || (t.i32()[3] == 1 && from == 0)),
             Error, "membership: rank {} sent a malformed proposal for round {}", from, round);
  const int32_t* v = t.i32();
  Proposal p;
  p.step = (static_cast<int64_t>(v[1]) << 32) | static_cast<uint32_t>(v[2]);
  p.joiners = v[3];
  for (int64_t i = 4; i < n; ++i) {
    SF_ENFORCE(v[i] >= 0 && v[i] < size, Error, "membership: rank {} named rank {} lost, outside a world of {}", from,
               v[i], size);
    p.lost.insert(v[i]);
  }
  return p;
}

// Why a round ends early.
enum class Wait { kGot, kLost, kNewLoss };

// Waits for `peer`'s message under `tag` in slices, giving the round up as soon as the transport
// reports a loss outside `known` (the others then move to the next round too).
Wait wait_for(Transport& world, int peer, Tag tag, const std::set<int>& known, milliseconds timeout, Tensor& out) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
    try {
      out = world.recv(peer, tag, std::min(kSlice, std::max(left, milliseconds(1))));
      return Wait::kGot;
    } catch (const PeerLost&) {
      const std::vector<int> gone = gone_peers(world);
      if (std::count(gone.begin(), gone.end(), peer)) return Wait::kLost;
      if (Clock::now() >= deadline) return Wait::kLost;  // alive but silent past the bound
      for (int r : gone)
        if (!known.count(r)) return Wait::kNewLoss;
    }
  }
}

// The joiner's part of a decided round with one joiner: rank 0 gives it its place at the door
// and relays its address to the members (the others wait for that). Appends the joiner's
// address to `addresses` and its label to change.joined; false when the round must be run again
// (the joiner did not answer, or rank 0 was lost). Rank 0 takes the request out of `joining`.
bool admit_joiner(Transport& world, const MembershipInput& in, std::vector<JoinRequest>& joining, uint32_t round,
                  const std::vector<int>& alive, const std::set<int>& lost, std::vector<std::string>& addresses,
                  MembershipChange& change) {
  const int me = world.rank();
  Tensor relay;
  if (me == 0) {
    const JoinRequest request = joining.front();
    joining.erase(joining.begin());  // admitted or dropped: never asked again
    std::vector<int> labels;
    for (int r : alive) labels.push_back(in.labels.empty() ? r : in.labels.at(static_cast<size_t>(r)));
    labels.push_back(request.label);
    std::vector<std::string> table = addresses;
    table.emplace_back();
    const std::string answer = in.door->admit(request, static_cast<int>(alive.size()),
                                              static_cast<int>(table.size()), in.generation + 1, table, labels,
                                              in.link_timeout);
    // The label travels first; an empty address tells the others the joiner did not answer.
    relay = text_tensor(fmt::format("{} {}", request.label, answer));
    for (int r : alive)
      if (r != me) world.send(r, membership_tag(round, kJoinerSlot), relay);
  } else if (wait_for(world, 0, membership_tag(round, kJoinerSlot), lost, in.timeout, relay) != Wait::kGot) {
    return false;
  }
  const std::string text = tensor_text(relay);
  BufferPool::global().release(relay);  // read (a no-op on rank 0, whose relay is its own)
  const size_t space = text.find(' ');
  int label = -1;
  const bool parsed = space != std::string::npos &&
                      std::from_chars(text.data(), text.data() + space, label).ptr == text.data() + space;
  SF_ENFORCE(parsed && label >= 0, Error, "membership: rank 0 relayed a malformed joiner '{}'", brief_text(text, 80));
  const std::string address = text.substr(space + 1);
  if (address.empty()) return false;
  addresses.push_back(address);
  change.joined = {label};
  return true;
}

}  // namespace

std::vector<int> gone_peers(const Transport& world) {
  std::set<int> out;
  for (int r : world.lost_peers()) out.insert(r);
  for (int r : world.closed_peers()) out.insert(r);
  return {out.begin(), out.end()};
}

MembershipChange agree_membership(Transport& world, const MembershipInput& in) {
  const int me = world.rank(), size = world.size();
  std::set<int> lost(in.lost.begin(), in.lost.end());
  lost.erase(me);
  std::vector<JoinRequest> joining = in.joining;
  for (uint32_t round = 0;; ++round) {
    // Every round either finds a new loss or links; a link that keeps failing with no loss is
    // not a membership question.
    SF_ENFORCE(round < kMaxRounds, Error, "membership: rank {} found no agreement in {} rounds (lost: {})", me,
               kMaxRounds, brief_list(std::vector<int>(lost.begin(), lost.end())));
    for (int r : gone_peers(world)) lost.insert(r);
    std::vector<int> alive;
    for (int r = 0; r < size; ++r)
      if (!lost.count(r)) alive.push_back(r);
    if (alive.size() == 1) {
      // Alone: either every peer died, or the others went on without this rank (they closed
      // their endpoints once their new world was up).
      const std::vector<int> closed = world.closed_peers();
      SF_ENFORCE(closed.empty(), Error,
                 "membership: rank {} was removed from the job: no peer answered and rank(s) {} had closed their "
                 "endpoints (the others went on without it)",
                 me, brief_list(closed));
    }
    // Proposals: the same to every rank believed alive. Rank 0 admits the oldest request at its
    // door while the job may grow.
    const int my_joiners =
        in.door && !joining.empty() && static_cast<int>(alive.size()) < in.max_size ? 1 : 0;
    const Tensor mine = encode_proposal(round, in.committed_step, my_joiners, lost);
    for (int r : alive)
      if (r != me) world.send(r, membership_tag(round, kProposalSlot), mine);
    bool agreed = true;
    int64_t step = in.committed_step;
    int joiners = me == 0 ? my_joiners : 0;
    std::set<int> merged = lost;
    for (int r : alive) {
      if (r == me) continue;
      Tensor got;
      const Wait w = wait_for(world, r, membership_tag(round, kProposalSlot), lost, in.timeout, got);
      if (w == Wait::kNewLoss) {
        agreed = false;
        break;
      }
      if (w == Wait::kLost) {
        merged.insert(r);
        agreed = false;
        continue;
      }
      const Proposal p = decode_proposal(got, round, r, size);
      BufferPool::global().release(got);  // read: back to the pool
      if (p.lost != lost) agreed = false;
      if (r == 0) joiners = p.joiners;
      merged.insert(p.lost.begin(), p.lost.end());
      step = std::min(step, p.step);
    }
    merged.erase(me);
    lost = merged;
    if (!agreed) continue;

    // Decided: the members swap their new endpoints' addresses, then link.
    MembershipChange change;
    change.lost.assign(lost.begin(), lost.end());
    change.members = alive;
    change.rank = static_cast<int>(std::find(alive.begin(), alive.end(), me) - alive.begin());
    change.step = step;
    change.rounds = static_cast<int>(round) + 1;
    const int new_size = static_cast<int>(alive.size()) + joiners;
    std::unique_ptr<WorldSeed> seed = world.seed_next_world(change.rank, new_size, in.generation + 1);
    SF_ENFORCE(seed, InvalidArgument, "membership: the {} transport cannot change its members", world.name());
    const Tensor address = text_tensor(seed->address());
    for (int r : alive)
      if (r != me) world.send(r, membership_tag(round, kAddressSlot), address);
    std::vector<std::string> addresses;
    bool complete = true;
    for (int r : alive) {
      if (r == me) {
        addresses.push_back(seed->address());
        continue;
      }
      Tensor got;
      if (wait_for(world, r, membership_tag(round, kAddressSlot), lost, in.timeout, got) != Wait::kGot) {
        complete = false;
        break;
      }
      addresses.push_back(tensor_text(got));
      BufferPool::global().release(got);
    }
    if (!complete) continue;
    if (joiners > 0 && !admit_joiner(world, in, joining, round, alive, lost, addresses, change)) continue;
    try {
      change.transport = seed->link(addresses, in.link_timeout);
    } catch (const Error&) {
      continue;  // a member was lost while linking: the next round finds it in the transport
    }
    change.waiting = joining;
    return change;
  }
}

}  // namespace sf::comm
