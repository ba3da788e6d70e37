#include <shardflow/comm/rank_context.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::comm {

namespace {

thread_local std::shared_ptr<RankContext> t_bound;

std::mutex g_process_mu;
std::shared_ptr<RankContext> g_process;

}  // namespace

RankContext::RankContext(std::shared_ptr<Transport> transport, int local_rank)
    : transport_(std::move(transport)), world_(world_group(transport_)), local_rank_(local_rank) {}

Group RankContext::create_group(const std::string& name, std::vector<int> ranks) {
  Group g = comm::create_group(transport_, name, std::move(ranks));
  std::lock_guard<std::mutex> lock(mu_);
  SF_ENFORCE(!groups_.count(name), InvalidArgument,
             "create_group('{}'): rank {} already has a group of that name (destroy_group it first)", name, rank());
  groups_.emplace(name, g);
  return g;
}

void RankContext::destroy_group(const std::string& name) {
  SF_ENFORCE(name != kWorldGroupName, InvalidArgument, "destroy_group('{}'): the world group cannot be destroyed",
             name);
  std::lock_guard<std::mutex> lock(mu_);
  SF_ENFORCE(groups_.erase(name) == 1, NotFound, "destroy_group('{}'): rank {} has no group of that name", name,
             rank());
}

Group RankContext::group(const std::string& name) const {
  if (name == kWorldGroupName) return world_;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = groups_.find(name);
  if (it == groups_.end()) {
    std::vector<std::string> known{kWorldGroupName};
    for (const auto& [n, g] : groups_) known.push_back(n);
    SF_THROW(NotFound, "group '{}' does not exist on rank {} (known: {})", brief_text(name, 80), rank(),
             brief_names(known));
  }
  return it->second;
}

RankContext* current_rank_or_null() {
  if (t_bound) return t_bound.get();
  std::lock_guard<std::mutex> lock(g_process_mu);
  return g_process.get();
}

std::shared_ptr<RankContext> current_rank_shared() {
  if (t_bound) return t_bound;
  std::lock_guard<std::mutex> lock(g_process_mu);
  return g_process;
}

bool is_virtual_rank() {
  if (!t_bound || t_bound->size() <= 1) return false;
  std::lock_guard<std::mutex> lock(g_process_mu);
  return t_bound != g_process;
}

RankContext& current_rank() {
  RankContext* ctx = current_rank_or_null();
  SF_ENFORCE(ctx, InvalidArgument,
             "comm: no rank on this thread: call sf::comm::init() first; with --devices N, run each rank's code "
             "through sf::comm::run_ranks()");
  return *ctx;
}

RankBinding::RankBinding(std::shared_ptr<RankContext> ctx) : previous_(std::move(t_bound)) { t_bound = std::move(ctx); }
RankBinding::~RankBinding() { t_bound = std::move(previous_); }

std::shared_ptr<RankContext> process_rank() {
  std::lock_guard<std::mutex> lock(g_process_mu);
  return g_process;
}

void replace_world(std::shared_ptr<Transport> transport) {
  std::shared_ptr<RankContext> old = process_rank();
  SF_ENFORCE(old && !is_virtual_rank(), InvalidArgument,
             "replace_world(): a membership change needs a process holding exactly one rank");
  auto next = std::make_shared<RankContext>(std::move(transport), old->local_rank());
  set_process_rank(next);
  if (t_bound == old) t_bound = next;  // the rank's own thread (run_ranks binds it)
  old->transport()->close();
}

void set_process_rank(std::shared_ptr<RankContext> ctx) {
  std::lock_guard<std::mutex> lock(g_process_mu);
  g_process = std::move(ctx);
}

Group default_group() {
  RankContext* ctx = current_rank_or_null();
  return ctx ? ctx->world() : Group();
}

int get_rank(const std::string& group) { return current_rank().group(group).rank(); }
int get_group_size(const std::string& group) { return current_rank().group(group).size(); }
int get_local_rank() { return current_rank().local_rank(); }
Group create_group(const std::string& name, std::vector<int> ranks) {
  return current_rank().create_group(name, std::move(ranks));
}
void destroy_group(const std::string& name) { current_rank().destroy_group(name); }

int get_world_rank_from_group_rank(const std::string& group, int group_rank) {
  return current_rank().group(group).world_rank(group_rank);
}

int get_group_rank_from_world_rank(int world_rank, const std::string& group) {
  const Group g = current_rank().group(group);
  const int r = g.group_rank_of(world_rank);
  SF_ENFORCE(r >= 0, InvalidArgument, "group '{}': world rank {} is not a member of [{}]", brief_text(group, 80),
             world_rank, brief_list(g.world_ranks()));
  return r;
}

}  // namespace sf::comm
