#include <shardflow/parallel/sharding/local_graph.h>

#include <fmt/format.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/builder.h>
#include <shardflow/parallel/redistribution/layout_edits.h>
#include <shardflow/parallel/redistribution_executor.h>
#include <shardflow/parallel/sharding/sharding_rule.h>

namespace sf {

void LocalGraph::add_group(const std::string& name, const std::vector<int>& ranks) {
  auto [it, added] = groups.emplace(name, ranks);
  SF_ENFORCE(added || it->second == ranks, InvalidArgument, "local graph of rank {}: group '{}' named for two rank lists",
             rank, name);
}

namespace {

class Lowering {
 public:
  Lowering(const Graph& global, const GraphSharding& s, int rank, LocalGraph& out)
      : global_(global), s_(s), rank_(rank), out_(out), b_(out.graph) {}

  void source(const Node& n) {
    const TensorLayout& layout = s_.at(n.id).layout;
    Attrs attrs = n.attrs;
    if (attrs.has("shape")) attrs.set("shape", layout.local_shape(n.shape));
    const Value v = b_.op(n.op, {}, std::move(attrs), n.name);
    out_.value[n.id] = v.id;
    if (n.op == "Input") out_.inputs.push_back({n.id, v.id, layout});
    if (n.op == "Parameter") out_.parameters.push_back({n.id, v.id, layout});
  }

  void op(const Node& n) {
    const NodeSharding& ns = s_.at(n.id);
    const OpSharding& s = *ns.op;
    std::vector<Value> in;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      in.push_back(carry(n.inputs[i], ns.in_plans[i], fmt::format("{}/in{}", n.name, i)));
    const Shape local = s.output.local_shape(n.shape);
    const ShardingRule& rule = *find_sharding_rule(n.op);
    Value y = rule.lower ? rule.lower(b_, context(n, s, local, std::move(in))) : b_.op(n.op, in, n.attrs, n.name);
    SF_ENFORCE(b_.shape(y) == local, ShapeError, "{} on rank {}: the local op gives shape {}, its layout {} asks for {}",
               node_label(n), rank_, brief_shape(b_.shape(y)), s.output.str(), brief_shape(local));
    if (s.scale != 1.0f) {
      b_.push_scope(n.name);
      y = b_.mul(y, b_.fill({}, s.scale));
      b_.pop_scope();
    }
    out_.value[n.id] = redistribute(ns.out_plan, y, n.name + "/out").id;
  }

 private:
  LowerContext context(const Node& n, const OpSharding& s, const Shape& local, std::vector<Value> in) {
    LowerContext ctx{.node = n, .local_out = local, .in = std::move(in), .in_slices = {},
                     .out_slice = s.output.slice(n.shape, rank_), .in_shapes = {}, .group_along = {}};
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      ctx.in_shapes.push_back(global_.node(n.inputs[i]).shape);
      ctx.in_slices.push_back(s.inputs[i].slice(ctx.in_shapes.back(), rank_));
    }
    ctx.group_along = [this, &s](int input, int dim) {
      const TensorLayout& l = s.inputs.at(input);
      const std::vector<int> ranks = l.group(rank_, l.tensor_map().at(dim));
      const std::string name = group_name(ranks);
      out_.add_group(name, ranks);
      return GroupRef{name, static_cast<int64_t>(ranks.size())};
    };
    return ctx;
  }

  // `producer`'s value in plan.to, redistributed once per (value, layout).
  Value carry(int producer, const RedistributionPlan& plan, const std::string& scope) {
    for (const auto& [id, layout, v] : carried_)
      if (id == producer && layout == plan.to) return v;
    const Value v = redistribute(plan, Value{out_.value[producer]}, scope);
    carried_.push_back({producer, plan.to, v});
    return v;
  }

  Value redistribute(const RedistributionPlan& plan, Value x, const std::string& scope) {
    if (plan.steps.empty()) return x;
    b_.push_scope(scope);
    const Value y = apply_redistribution(b_, plan, rank_, x);
    b_.pop_scope();
    for (const auto& [name, ranks] : redistribution_groups(plan, rank_)) out_.add_group(name, ranks);
    return y;
  }

  struct Carried {
    int producer;
    TensorLayout layout;
    Value value;
  };
  const Graph& global_;
  const GraphSharding& s_;
  int rank_;
  LocalGraph& out_;
  GraphBuilder b_;
  std::vector<Carried> carried_;
};

}  // namespace

LocalGraph build_local_graph(const Graph& global, const GraphSharding& sharding, int rank) {
  SF_ENFORCE(rank >= 0 && rank < sharding.devices, InvalidArgument, "local graph: rank {} is outside the {} devices",
             rank, sharding.devices);
  LocalGraph out;
  out.rank = rank;
  out.value.assign(global.size(), -1);
  Lowering lowering(global, sharding, rank, out);
  for (int id : sharding.nodes) {
    const Node& n = global.node(id);
    if (sharding.at(id).op)
      lowering.op(n);
    else
      lowering.source(n);
  }
  return out;
}

}  // namespace sf
