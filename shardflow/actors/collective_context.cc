#include <shardflow/actors/collective_context.h>

#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>

namespace sf {

CollectiveContext& CollectiveContext::add(comm::Group group) {
  SF_ENFORCE(group.defined(), InvalidArgument, "CollectiveContext: cannot add an undefined group");
  const std::string name = group.name();
  SF_ENFORCE(groups.emplace(name, std::move(group)).second, InvalidArgument,
             "CollectiveContext: group '{}' is already present", name);
  return *this;
}

const comm::Group* CollectiveContext::find(const std::string& name) const {
  const auto it = groups.find(name);
  return it == groups.end() ? nullptr : &it->second;
}

comm::Group CollectiveContext::resolve(const std::string& name, const std::string& what) const {
  if (const comm::Group* g = find(name)) return *g;
  if (comm::RankContext* rank = comm::current_rank_or_null()) {
    try {
      return rank->group(name);
    } catch (const NotFound&) {
    }
  }
  SF_THROW(InvalidArgument,
           "runtime: {} runs on group '{}', which neither RuntimeOptions::collectives nor the calling thread's rank "
           "(comm::create_group) holds",
           what, name);
}

CollectiveContext world_context(std::shared_ptr<comm::Transport> transport) {
  CollectiveContext ctx;
  ctx.add(comm::world_group(std::move(transport)));
  return ctx;
}

GroupRef group_ref(const comm::Group& group) { return {group.name(), group.size()}; }

}  // namespace sf
