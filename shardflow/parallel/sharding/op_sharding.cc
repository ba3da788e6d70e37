#include <shardflow/parallel/sharding/op_sharding.h>

#include <fmt/format.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/parallel/sharding/sharding_rule.h>

namespace sf {

namespace {

// Each loop's device axes, from tuple strategies (the op's own device matrix) or layouts.
struct LoopAxes {
  DeviceMatrix mesh;
  std::vector<std::string> names;       // axis names, or none
  std::vector<std::vector<int>> axes;   // per loop
};

std::string axes_str(const LoopAxes& la, const std::vector<int>& axes) {
  std::vector<std::string> parts;
  for (int a : axes) parts.push_back(la.names.empty() ? std::to_string(a) : fmt::format("'{}'", la.names[a]));
  return fmt::format("({})", fmt::join(parts, ", "));
}

LoopAxes from_tuples(const std::string& what, const LoopNest& nest, const OpStrategy& s, int64_t devices) {
  std::vector<int64_t> blocks(nest.loops.size(), 0);
  std::vector<int> first(nest.loops.size(), -1);  // the input that set each loop
  for (size_t i = 0; i < s.in.size(); ++i) {
    const Strategy& t = s.in[i].tuple();
    for (size_t d = 0; d < t.size(); ++d) {
      SF_ENFORCE(t[d] >= 1, InvalidArgument, "{}: in_strategy entry {} {} has {} blocks on dim {}; each must be >= 1",
                 what, i, strategy_str(t), t[d], d);
      const int l = nest.inputs[i][d];
      if (l == LoopNest::kBroadcast) {
        SF_ENFORCE(t[d] == 1, InvalidArgument,
                   "{}: in_strategy entry {} {} splits dim {} of input {}, which is broadcast (size 1)", what, i,
                   strategy_str(t), d, i);
        continue;
      }
      if (first[l] < 0) {
        blocks[l] = t[d];
        first[l] = static_cast<int>(i);
      }
      SF_ENFORCE(blocks[l] == t[d], InvalidArgument,
                 "{}: the inputs split loop {} differently: input {} in {} blocks ({}), input {} in {} ({}); they must "
                 "agree",
                 what, nest.loops[l], first[l], blocks[l], s.in[first[l]].str(), i, t[d], s.in[i].str());
    }
  }
  LoopAxes la;
  std::vector<int64_t> dims;
  for (int64_t b : blocks) dims.push_back(b == 0 ? 1 : b);
  la.mesh = DeviceMatrix(dims).fit_to(devices, fmt::format("{}: {}", what, s.str()));
  for (size_t l = 0; l < blocks.size(); ++l)
    la.axes.push_back(blocks[l] > 1 ? std::vector<int>{static_cast<int>(l)} : std::vector<int>{});
  return la;
}

LoopAxes from_layouts(const std::string& what, const LoopNest& nest, const OpStrategy& s, int64_t devices) {
  LoopAxes la;
  const TensorLayout& l0 = s.in[0].layout();
  std::vector<bool> set(nest.loops.size(), false);
  std::vector<int> first(nest.loops.size(), -1);
  la.axes.assign(nest.loops.size(), {});
  for (size_t i = 0; i < s.in.size(); ++i) {
    const TensorLayout& l = s.in[i].layout();
    SF_ENFORCE(l.mesh() == l0.mesh(), InvalidArgument,
               "{}: in_strategy layouts on different device matrices, {} for input 0 and {} for input {}; one op's "
               "layouts come from one Layout",
               what, l0.mesh().str(), l.mesh().str(), i);
    SF_ENFORCE(!l.is_partial(), InvalidArgument, "{}: in_strategy entry {} {} is partial; a strategy cannot ask for that",
               what, i, l.spec());
    for (int d = 0; d < l.dims(); ++d) {
      const int lp = nest.inputs[i][d];
      const std::vector<int>& axes = l.tensor_map()[d];
      if (lp == LoopNest::kBroadcast) {
        SF_ENFORCE(axes.empty(), InvalidArgument, "{}: in_strategy entry {} {} splits dim {} of input {}, which is "
                   "broadcast (size 1)", what, i, l.spec(), d, i);
        continue;
      }
      if (!set[lp]) {
        la.axes[lp] = axes;
        set[lp] = true;
        first[lp] = static_cast<int>(i);
      }
      SF_ENFORCE(la.axes[lp] == axes, InvalidArgument,
                 "{}: the inputs split loop {} differently: input {} over axes {} ({}), input {} over {} ({}); they "
                 "must agree",
                 what, nest.loops[lp], first[lp], axes_str({l0.mesh(), l0.axis_names(), {}}, la.axes[lp]),
                 s.in[first[lp]].str(), i, axes_str({l0.mesh(), l0.axis_names(), {}}, axes), s.in[i].str());
    }
  }
  const TensorLayout fitted = l0.fit_to(devices, fmt::format("{}: {}", what, s.str()));
  la.mesh = fitted.mesh();
  la.names = fitted.axis_names();
  return la;
}

// Refuses an axis that two loops use: it would split two dims of the output, or one tensor
// twice, and one device position cannot pick two blocks of one loop nest.
void check_axes_distinct(const std::string& what, const LoopNest& nest, const LoopAxes& la) {
  std::vector<int> owner(la.mesh.axes(), -1);
  for (size_t l = 0; l < la.axes.size(); ++l)
    for (int a : la.axes[l]) {
      SF_ENFORCE(owner[a] < 0, InvalidArgument,
                 "{}: axis {} is used by loops {} and {}; one axis may split only one dim of the op", what,
                 axes_str(la, {a}), nest.loops[owner[a]], nest.loops[l]);
      owner[a] = static_cast<int>(l);
    }
}

TensorLayout layout_of(const LoopAxes& la, const std::vector<int>& loops, std::vector<int> partial, std::string spec) {
  TensorLayout::TensorMap map;
  for (int l : loops) map.push_back(l == LoopNest::kBroadcast ? std::vector<int>{} : la.axes[l]);
  return TensorLayout(la.mesh, std::move(map), std::move(partial), la.names, std::move(spec));
}

TensorLayout out_layout(const std::string& what, const OpStrategy& s, const Shape& shape, int64_t devices) {
  SF_ENFORCE(s.out.size() == 1, InvalidArgument, "{}: out_strategy has {} entries; the op has 1 output", what,
             s.out.size());
  const TensorStrategy& o = s.out[0];
  SF_ENFORCE(o.dims() == static_cast<int>(shape.size()), InvalidArgument,
             "{}: out_strategy {} has {} dims but the output has {} (shape {})", what, o.str(), o.dims(), shape.size(),
             brief_shape(shape));
  const std::string ctx = what + " out_strategy";
  TensorLayout l = o.is_layout() ? o.layout().fit_to(devices, ctx) : strategy_to_layout(o.tuple(), devices, ctx);
  l.check(shape, ctx);
  return l;
}

const ShardingRule& rule_of(const Node& node) {
  const ShardingRule* rule = find_sharding_rule(node.op);
  SF_ENFORCE(rule != nullptr, NotFound, "{}: op {} has no sharding rule (ops with one: {})", node_label(node), node.op,
             fmt::join(ops_with_sharding_rules(), ", "));
  return *rule;
}

// The loop a default strategy splits: that of output dim 0, else of input 0's dim 0.
int batch_loop(const LoopNest& nest) {
  if (!nest.output.empty()) return nest.output[0];
  if (!nest.inputs.empty() && !nest.inputs[0].empty()) return nest.inputs[0][0];
  return LoopNest::kBroadcast;
}

}  // namespace

OpSharding shard_op(const Node& node, const std::vector<Shape>& inputs, const std::optional<OpStrategy>& strategy,
                    int64_t devices) {
  const std::string what = fmt::format("{} '{}'", node.op, node.name);
  const ShardingRule& rule = rule_of(node);
  const LoopNest nest = rule.nest(node, inputs);
  OpSharding out;
  out.given = strategy.has_value();
  out.strategy = strategy ? *strategy : default_strategy(node, inputs, devices);
  const OpStrategy& s = out.strategy;
  SF_ENFORCE(s.in.size() == inputs.size(), InvalidArgument, "{}: {} has {} entries for the op's {} inputs",
             what, s.str(), s.in.size(), inputs.size());
  bool layouts = false, tuples = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    SF_ENFORCE(s.in[i].dims() == static_cast<int>(inputs[i].size()), InvalidArgument,
               "{}: in_strategy entry {} {} has {} dims but input {} has {} (shape {})", what, i, s.in[i].str(),
               s.in[i].dims(), i, inputs[i].size(), brief_shape(inputs[i]));
    (s.in[i].is_layout() ? layouts : tuples) = true;
  }
  SF_ENFORCE(!(layouts && tuples), InvalidArgument,
             "{}: {} mixes tuple strategies and layouts; one op takes one form (a network may mix them "
             "across ops)",
             what, s.str());
  LoopAxes la = layouts ? from_layouts(what, nest, s, devices) : from_tuples(what, nest, s, devices);
  check_axes_distinct(what, nest, la);
  out.mesh = la.mesh;
  // Check the split as asked before gathering the loops the kernel needs whole.
  for (size_t i = 0; i < inputs.size(); ++i)
    layout_of(la, nest.inputs[i], {}, s.in[i].str()).check(inputs[i], fmt::format("{} input {}", what, i));
  std::vector<bool> in_output(nest.loops.size(), false);
  for (int l : nest.output) in_output[l] = true;
  std::vector<int> partial;
  int64_t reduced_blocks = 1;
  for (size_t l = 0; l < nest.loops.size(); ++l) {
    if (nest.whole[l]) la.axes[l].clear();
    if (in_output[l] || (!nest.local.empty() && nest.local[l])) continue;
    partial.insert(partial.end(), la.axes[l].begin(), la.axes[l].end());
    reduced_blocks *= la.mesh.size_of(la.axes[l]);
  }
  // The split was checked on the input dims; an output dim on the same loop may be smaller
  // (Reshape (8, 64) -> (8, 4, 16): the 64's loop runs over the 4 heads).
  for (size_t d = 0; d < nest.output.size(); ++d) {
    const int l = nest.output[d];
    const int64_t blocks = la.mesh.size_of(la.axes[l]);
    SF_ENFORCE(node.shape.at(d) % blocks == 0, InvalidArgument,
               "{}: {} splits loop {} into {} blocks, which do not divide output dim {} of size {}; a split must "
               "divide every dim on its loop",
               what, s.str(), nest.loops[l], blocks, d, node.shape[d]);
  }
  for (size_t i = 0; i < inputs.size(); ++i) out.inputs.push_back(layout_of(la, nest.inputs[i], {}, s.in[i].str()));
  out.output = layout_of(la, nest.output, partial, {});
  out.scale = nest.mean ? 1.0f / static_cast<float>(reduced_blocks) : 1.0f;
  out.carried = s.out.empty() ? layout_of(la, nest.output, {}, {}) : out_layout(what, s, node.shape, devices);
  return out;
}

OpStrategy default_strategy(const Node& node, const std::vector<Shape>& inputs, int64_t devices) {
  const LoopNest nest = rule_of(node).nest(node, inputs);
  const int batch = batch_loop(nest);
  bool divides = batch != LoopNest::kBroadcast && !nest.whole[batch];
  for (size_t i = 0; i < inputs.size() && divides; ++i)
    for (size_t d = 0; d < inputs[i].size(); ++d)
      if (nest.inputs[i][d] == batch && inputs[i][d] % devices != 0) divides = false;
  for (size_t d = 0; d < nest.output.size() && divides; ++d)
    if (nest.output[d] == batch && node.shape.at(d) % devices != 0) divides = false;  // a Reshape's smaller dim
  OpStrategy s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Strategy t;
    for (size_t d = 0; d < inputs[i].size(); ++d) t.push_back(divides && nest.inputs[i][d] == batch ? devices : 1);
    s.in.emplace_back(std::move(t));
  }
  return s;
}

}  // namespace sf
