// Test support: runs redistributions on N virtual ranks of an inproc world, one Runtime per
// rank on its own thread, every plan's groups created on every member rank.
//
// run_plans(n, plans, inputs, cotangents) builds on each rank one graph holding every plan
// (shard in, redistributed shard out) plus the loss sum_p reduce_sum(out_p * c_p), runs it once
// and returns, per rank, per plan, the output and the gradient of the loss w.r.t. the input.
// A failure on any rank is rethrown; a hang aborts after the rank threads' deadline
// (tests/comm/rank_threads.h).
#pragma once

#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

#include <shardflow/actors/collective_context.h>
#include <shardflow/actors/runtime.h>
#include <shardflow/comm/group.h>
#include <shardflow/comm/inproc/transport.h>
#include <shardflow/ops/autodiff.h>
#include <shardflow/ops/builder.h>
#include <shardflow/ops/op_def.h>
#include <shardflow/parallel/redistribution_executor.h>
#include "tests/comm/rank_threads.h"

namespace sf::paralleltest {

struct RankResult {
  std::vector<Tensor> out, grad;  // per plan
};

// inputs[r][p] is rank r's shard of plan p's input, cotangents[r][p] its c_p (same shape as
// the output shard).
inline std::vector<RankResult> run_plans(int n, const std::vector<RedistributionPlan>& plans,
                                         const std::vector<std::vector<Tensor>>& inputs,
                                         const std::vector<std::vector<Tensor>>& cotangents) {
  std::vector<RankResult> results(n);
  auto world = comm::make_inproc_world(n);
  commtest::run_ranks(n, [&](int rank) {
    CollectiveContext ctx;
    ctx.timeout = std::chrono::milliseconds(10000);
    std::map<std::string, std::vector<int>> groups;
    for (const auto& plan : plans)
      for (auto& [name, ranks] : redistribution_groups(plan, rank)) groups.emplace(name, ranks);
    for (const auto& [name, ranks] : groups) ctx.add(comm::create_group(world[rank], name, ranks));

    Graph g;
    GraphBuilder b(g);
    std::vector<int> xs, ys;
    Runtime::Feeds feeds;
    Value loss;
    for (size_t p = 0; p < plans.size(); ++p) {
      b.push_scope(fmt::format("plan{}", p));
      const Value x = b.input(fmt::format("x{}", p), plans[p].from.local_shape(plans[p].shape));
      const Value y = apply_redistribution(b, plans[p], rank, x);
      const Value c = b.input(fmt::format("c{}", p), b.shape(y));
      const Value term = b.reduce_sum(b.mul(y, c));
      loss = loss.valid() ? b.add(loss, term) : term;
      b.pop_scope();
      xs.push_back(x.id);
      ys.push_back(y.id);
      feeds.push_back({x.id, inputs[rank][p]});
      feeds.push_back({c.id, cotangents[rank][p]});
    }
    // The runtime fetches computed nodes only; a plan may hand back its input itself (no steps,
    // or only a Partial step on a rank that keeps its value).
    std::vector<int> wanted = ys;
    for (int dx : gradients(g, loss.id, xs)) wanted.push_back(dx);
    std::vector<int> fetches;
    for (int id : wanted)
      if (!g.node(id).def->is_source()) fetches.push_back(id);
    RuntimeOptions opts;
    opts.collectives = ctx;
    Runtime rt(g, fetches, opts);
    const std::vector<Tensor>& got = rt.run(feeds);
    std::vector<Tensor> values;
    for (size_t k = 0, next = 0; k < wanted.size(); ++k) {
      if (!g.node(wanted[k]).def->is_source()) {
        values.push_back(got[next++].clone());
        continue;
      }
      for (const auto& [id, t] : feeds)
        if (id == wanted[k]) values.push_back(t.clone());
    }
    for (size_t p = 0; p < plans.size(); ++p) {
      results[rank].out.push_back(values[p]);
      results[rank].grad.push_back(values[plans.size() + p]);
    }
  });
  return results;
}

}  // namespace sf::paralleltest
