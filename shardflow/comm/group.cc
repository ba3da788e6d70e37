#include <shardflow/comm/group.h>

#include <set>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::comm {

struct Group::State {
  std::shared_ptr<Transport> transport;
  std::string name;
  std::vector<int> ranks;
  int rank = 0;
  uint32_t id = 0;
  mutable std::atomic<uint32_t> seq{0};
  mutable std::mutex mu;  // guards failure and worker
  mutable std::optional<PeerLost> failure;
  mutable std::unique_ptr<Worker> worker;
  mutable FlightRecorder recorder;
  ~State() { worker.reset(); }  // drain queued collectives while the rest is alive
};

Tag collective_tag(uint32_t group_id, uint32_t seq, uint8_t slot) {
  return (Tag{group_id & 0x7fffffu} << 40) | (Tag{seq} << 8) | slot;
}

Tag p2p_tag(uint32_t group_id, uint32_t sr_tag) { return (Tag{1} << 63) | (Tag{group_id & 0x7fffffu} << 40) | sr_tag; }

const Group::State& Group::state() const {
  SF_ENFORCE(state_, InvalidArgument, "comm: use of an undefined Group (create it with world_group or create_group)");
  return *state_;
}

const std::string& Group::name() const { return state().name; }
int Group::rank() const { return state().rank; }
int Group::size() const { return static_cast<int>(state().ranks.size()); }
const std::vector<int>& Group::world_ranks() const { return state().ranks; }
uint32_t Group::id() const { return state().id; }
Transport& Group::transport() const { return *state().transport; }

int Group::world_rank(int group_rank) const {
  SF_ENFORCE(group_rank >= 0 && group_rank < size(), InvalidArgument, "group '{}': rank {} outside a group of {}",
             name(), group_rank, size());
  return state().ranks[group_rank];
}

int Group::group_rank_of(int world_rank) const {
  const auto& r = state().ranks;
  for (size_t i = 0; i < r.size(); ++i)
    if (r[i] == world_rank) return static_cast<int>(i);
  return -1;
}

uint32_t Group::next_sequence() const { return state().seq.fetch_add(1, std::memory_order_relaxed); }

void Group::mark_failed(int world_rank, const std::string& message) const {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!state().failure) state().failure.emplace(world_rank, message);
}

void Group::throw_if_failed(const std::function<std::string()>& where) const {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().failure)
    throw PeerLost(state().failure->rank(),
                   fmt::format("{}: group '{}' failed earlier: {}", where(), state().name, state().failure->what()),
                   SF_WHERE);
}

Worker& Group::worker() const {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!state().worker) state().worker = std::make_unique<Worker>();
  return *state().worker;
}

FlightRecorder& Group::flight_recorder() const { return state().recorder; }

Group Group::unowned() const {
  state();
  return Group(std::shared_ptr<State>(std::shared_ptr<State>{}, state_.get()));
}

Group world_group(std::shared_ptr<Transport> transport) {
  SF_ENFORCE(transport, InvalidArgument, "world_group: no transport");
  auto s = std::make_shared<Group::State>();
  s->name = kWorldGroupName;
  for (int r = 0; r < transport->size(); ++r) s->ranks.push_back(r);
  s->rank = transport->rank();
  s->id = 0;
  s->transport = std::move(transport);
  return Group(std::move(s));
}

Group create_group(std::shared_ptr<Transport> transport, const std::string& name, std::vector<int> ranks) {
  SF_ENFORCE(transport, InvalidArgument, "create_group('{}'): no transport", brief_text(name, 80));
  SF_ENFORCE(!name.empty(), InvalidArgument, "create_group: the group name is empty");
  SF_ENFORCE(name != kWorldGroupName, InvalidArgument, "create_group('{}'): the name is reserved for the world group",
             brief_text(name, 80));
  SF_ENFORCE(!ranks.empty(), InvalidArgument, "create_group('{}'): the rank list is empty", brief_text(name, 80));
  std::set<int> seen;
  for (int r : ranks) {
    SF_ENFORCE(r >= 0 && r < transport->size(), InvalidArgument,
               "create_group('{}'): rank {} is outside the world of {} ranks", brief_text(name, 80), r,
               transport->size());
    SF_ENFORCE(seen.insert(r).second, InvalidArgument, "create_group('{}'): rank {} is listed twice in [{}]",
               brief_text(name, 80), r, brief_list(ranks));
  }
  auto s = std::make_shared<Group::State>();
  s->name = name;
  s->ranks = std::move(ranks);
  s->rank = -1;
  for (size_t i = 0; i < s->ranks.size(); ++i)
    if (s->ranks[i] == transport->rank()) s->rank = static_cast<int>(i);
  SF_ENFORCE(s->rank >= 0, InvalidArgument, "create_group('{}'): this rank {} is not a member of [{}]",
             brief_text(name, 80), transport->rank(), brief_list(s->ranks));
  // FNV-1a over the name and the ranks: equal on every member without any message. Id 0 is
  // the world's, kMembershipGroupId the membership protocol's; a collision with another
  // group's id needs the same 23-bit hash.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t b) { h = (h ^ b) * 1099511628211ull; };
  for (char c : name) mix(static_cast<unsigned char>(c));
  for (int r : s->ranks) mix(static_cast<uint64_t>(r) + 0x100);
  s->id = static_cast<uint32_t>((h ^ (h >> 23) ^ (h >> 46)) & 0x7fffffu);
  if (s->id == 0) s->id = 1;
  if (s->id == kMembershipGroupId) s->id = kMembershipGroupId - 1;
  s->transport = std::move(transport);
  return Group(std::move(s));
}

}  // namespace sf::comm
