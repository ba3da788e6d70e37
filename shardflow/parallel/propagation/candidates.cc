#include <shardflow/parallel/propagation/candidates.h>

#include <algorithm>

#include <shardflow/core/error.h>
#include <shardflow/parallel/sharding/sharding_rule.h>

namespace sf {

namespace {

// Each loop's extent, from the first tensor dim that runs over it.
std::vector<int64_t> loop_extents(const LoopNest& nest, const Node& node, const std::vector<Shape>& inputs) {
  std::vector<int64_t> extent(nest.loops.size(), 1);
  std::vector<bool> known(nest.loops.size(), false);
  auto see = [&](int loop, int64_t size) {
    if (loop == LoopNest::kBroadcast || known[loop]) return;
    extent[loop] = size;
    known[loop] = true;
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t d = 0; d < inputs[i].size(); ++d) see(nest.inputs[i][d], inputs[i][d]);
  for (size_t d = 0; d < nest.output.size(); ++d) see(nest.output[d], node.shape[d]);
  return extent;
}

// Every assignment of block counts to loops, counts ascending, first loop slowest; `blocks`
// holds the prefix chosen so far and `used` its product.
void enumerate(const LoopNest& nest, const std::vector<int64_t>& extent, int64_t devices, std::vector<int64_t>& blocks,
               int64_t used, std::vector<std::vector<int64_t>>& out) {
  const size_t l = blocks.size();
  if (l == extent.size()) {
    out.push_back(blocks);
    return;
  }
  for (int64_t b = 1; b <= devices / used; ++b) {
    if ((devices / used) % b != 0 || extent[l] % b != 0) continue;
    if (b > 1 && nest.whole[l]) break;
    blocks.push_back(b);
    enumerate(nest, extent, devices, blocks, used * b, out);
    blocks.pop_back();
  }
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

}  // namespace

std::vector<Candidate> op_candidates(const Node& node, const std::vector<Shape>& inputs, int64_t devices) {
  const ShardingRule* rule = find_sharding_rule(node.op);
  SF_ENFORCE(rule != nullptr, NotFound, "{}: op {} has no sharding rule, so no strategy can be searched for it",
             node_label(node), node.op);
  const LoopNest nest = rule->nest(node, inputs);
  std::vector<std::vector<int64_t>> cuts;
  std::vector<int64_t> blocks;
  enumerate(nest, loop_extents(nest, node, inputs), devices, blocks, 1, cuts);
  int64_t most = 1;
  for (const auto& c : cuts) most = std::max(most, product(c));
  std::vector<Candidate> out;
  for (const auto& c : cuts) {
    if (product(c) != most) continue;
    OpStrategy s;
    for (size_t i = 0; i < inputs.size(); ++i) {
      Strategy t;
      for (int loop : nest.inputs[i]) t.push_back(loop == LoopNest::kBroadcast ? 1 : c[loop]);
      s.in.emplace_back(std::move(t));
    }
    try {
      OpSharding sharding = shard_op(node, inputs, s, devices);
      sharding.given = false;
      out.push_back({std::move(sharding)});
    } catch (const InvalidArgument&) {
      // A cut the rule refuses (e.g. one that splits a broadcast dim) is no candidate.
    }
  }
  // An op no cut fits (a scalar op: no loops) keeps the default, data parallel where it can be.
  if (out.empty()) out.push_back({shard_op(node, inputs, std::nullopt, devices)});
  return out;
}

}  // namespace sf
