// Sharding of every virtual stage, then per chunk of this rank: its local graph copied into the
// rank's graph with the Receives standing in for its received Inputs, its Sends, its backward;
// then the phases by reachability, the registers and the collective order from the schedule.
#include <shardflow/pipeline/stage_program.h>

#include <algorithm>
#include <fmt/format.h>
#include <set>

#include <shardflow/core/error.h>
#include <shardflow/ops/autodiff.h>
#include <shardflow/ops/builder.h>
#include <shardflow/ops/collective_attrs.h>
#include <shardflow/ops/collective_builder.h>
#include <shardflow/ops/op_def.h>
#include <shardflow/ops/plan.h>
#include <shardflow/parallel/redistribution/layout_edits.h>
#include <shardflow/parallel/reshard_plan.h>
#include <shardflow/parallel/shard_box.h>
#include <shardflow/parallel/sharding/local_graph.h>

namespace sf::pipeline {
namespace {

// A transfer's sr_tag: direction, the receiving virtual stage, the value's index at the boundary
// and the piece's index in the receiver's plan. Both ends compute it from the same plan.
int64_t transfer_tag(bool gradient, int receiver, size_t value, size_t piece) {
  SF_ENFORCE(receiver < 128 && value < 256 && piece < 65536, InvalidArgument,
             "pipeline: a stage boundary of more than 255 values or 65535 pieces per value, or over 127 virtual "
             "stages, is not supported");
  return (gradient ? int64_t{1} << 31 : 0) | (int64_t{receiver} << 24) | (static_cast<int64_t>(value) << 16) |
         static_cast<int64_t>(piece);
}

std::vector<char> mask_of(const Graph& g, const std::vector<int>& ids) {
  std::vector<char> m(g.size(), 0);
  for (int id : ids) m[id] = 1;
  return m;
}

// Pieces whose boxes tile a block as a grid, joined into the block by Concats (dims from `dim` on).
Value join(GraphBuilder& b, const std::vector<std::pair<ShardBox, Value>>& pieces, size_t dim) {
  if (pieces.size() == 1) return pieces[0].second;
  const size_t dims = pieces[0].first.dims.size();
  for (size_t d = dim; d < dims; ++d) {
    std::map<int64_t, std::vector<std::pair<ShardBox, Value>>> by_offset;
    for (const auto& p : pieces) by_offset[p.first.dims[d].offset].push_back(p);
    if (by_offset.size() == 1) continue;
    std::vector<Value> parts;
    for (const auto& [offset, group] : by_offset) parts.push_back(join(b, group, d + 1));
    return b.concat(parts, static_cast<int64_t>(d));
  }
  SF_THROW(Error, "pipeline: the pieces of a received block do not tile it");
}

// Copies `src` into `dst` under `prefix`, except the nodes `map` already gives (received values).
void copy_into(Graph& dst, const Graph& src, const std::string& prefix, std::vector<int>& map) {
  for (const Node& n : src.nodes()) {
    if (map[n.id] >= 0) continue;
    std::vector<int> ins;
    for (int in : n.inputs) ins.push_back(map[in]);
    map[n.id] = dst.add(n.op, std::move(ins), n.attrs, prefix + n.name);
  }
}

// Per chunk, the most micro-batches the stage's list has between a chunk's F and its last phase.
std::vector<int> peak_in_flight(const Schedule& schedule, int stage, bool split) {
  std::vector<int> now(schedule.chunks, 0), peak(schedule.chunks, 0);
  for (const Action& a : schedule.actions[stage]) {
    if (a.kind == ActionKind::kForward) peak[a.chunk] = std::max(peak[a.chunk], ++now[a.chunk]);
    if (a.kind == (split ? ActionKind::kWeight : ActionKind::kBackward)) --now[a.chunk];
  }
  return peak;
}

struct Builder {
  Builder(const std::vector<StageGraph>& st, const Schedule& sc, const StageProgramOptions& o)
      : stages(st), schedule(sc), opts(o) {}

  const std::vector<StageGraph>& stages;
  const Schedule& schedule;
  const StageProgramOptions& opts;
  std::vector<GraphSharding> shardings;
  StageProgram prog;
  int world = 1;
  float gradient_scale = 1.0f;  // multiplies the seed: the batch's blocks when gradients are summed
  std::vector<std::vector<int>> chunk_act_sends, chunk_grad_sends;  // Send tokens per chunk

  int p() const { return schedule.stages; }
  int world_rank(int virtual_stage, int local) const { return (virtual_stage % p()) * opts.per_stage + local; }
  const TensorLayout& layout(int k, int id) const { return shardings[k].at(id).layout; }

  // The layout a boundary value has where it is made (k) and where it is consumed (k + 1).
  const TensorLayout& made(int k, size_t j) const { return layout(k, stages[k].send_outputs[j]); }
  const TensorLayout& consumed(int k, size_t j) const { return layout(k + 1, stages[k + 1].recv_inputs[j]); }

  // Receives this rank's block of a value under `to` from the ranks of virtual stage `from_stage`
  // holding it under `from`, and joins the pieces.
  Value receive(GraphBuilder& b, const char* group, bool gradient, int receiver, size_t j, int from_stage,
                const Node& global, const TensorLayout& from, const TensorLayout& to, std::vector<int>& nodes) {
    const TargetPlan plan = plan_reshard_target(global.shape, global.dtype, from, to, prog.local_rank);
    CollectiveBuilder cb(b, {group, world});
    std::vector<std::pair<ShardBox, Value>> pieces;
    for (size_t i = 0; i < plan.pieces.size(); ++i) {
      const ReshardPiece& piece = plan.pieces[i];
      const Value r = cb.receive(transfer_tag(gradient, receiver, j, i), world_rank(from_stage, piece.source_rank),
                                 piece.box.shape(), global.dtype);
      nodes.push_back(r.id);
      prog.received_bytes += piece.bytes();
      pieces.emplace_back(piece.box, r);
    }
    SF_ENFORCE(!pieces.empty(), InvalidArgument, "pipeline: {} crosses a stage boundary with an empty block",
               node_label(global));
    return join(b, pieces, 0);
  }

  // Sends the pieces of `x` (this rank's block under `from`) that ranks of virtual stage `to_stage`
  // need under `to`.
  void send(GraphBuilder& b, Value x, bool gradient, int receiver, size_t j, const Node& global,
            const TensorLayout& from, const TensorLayout& to, std::vector<int>& tokens) {
    const ReshardPlan plan = plan_reshard(global.shape, global.dtype, from, to);
    const ShardBox& mine = plan.sources[prog.local_rank];
    CollectiveBuilder cb(b, {kSendGroup, world});
    for (const TargetPlan& target : plan.targets)
      for (size_t i = 0; i < target.pieces.size(); ++i) {
        const ReshardPiece& piece = target.pieces[i];
        if (piece.source_rank != prog.local_rank) continue;
        Value part = x;
        if (!(piece.box == mine)) {
          std::vector<int64_t> begin, end;
          for (size_t d = 0; d < piece.box.dims.size(); ++d) {
            begin.push_back(piece.box.dims[d].offset - mine.dims[d].offset);
            end.push_back(begin.back() + piece.box.dims[d].extent);
          }
          part = b.strided_slice(x, begin, end);
        }
        tokens.push_back(
            cb.send(part, transfer_tag(gradient, receiver, j, i), world_rank(receiver, target.target_rank)).id);
        prog.sent_bytes += piece.bytes();
      }
  }

  void add_groups(const std::map<std::string, std::vector<int>>& local_groups) {
    for (const auto& [name, ranks] : local_groups) {
      std::vector<int> w;
      for (int r : ranks) w.push_back(prog.stage * opts.per_stage + r);
      prog.groups[name] = w;
    }
  }

  void build_chunk(int c) {
    const int k = c * p() + prog.stage;
    const StageGraph& sg = stages[k];
    const std::string prefix = schedule.chunks > 1 ? fmt::format("chunk{}/", c) : "";
    LocalGraph local = build_local_graph(sg.graph, shardings[k], prog.local_rank);
    add_groups(local.groups);
    StageProgram::Chunk& ch = prog.chunks.emplace_back();
    ch.virtual_stage = k;
    std::vector<int> map(local.graph.size(), -1);
    GraphBuilder b(prog.graph);
    b.push_scope(prefix + "Pipeline");
    std::vector<int> recv_values;
    for (size_t j = 0; j < sg.recv_inputs.size(); ++j) {
      const Node& global = sg.graph.node(sg.recv_inputs[j]);
      const Value v = receive(b, kRecvActivationGroup, false, k, j, k - 1, global, made(k - 1, j), consumed(k - 1, j),
                              ch.recv_nodes);
      map[local.value[global.id]] = v.id;
      recv_values.push_back(v.id);
    }
    for (size_t j = 0; j < sg.dout_inputs.size(); ++j) {
      const Node& global = sg.graph.node(sg.dout_inputs[j]);
      const Value v = receive(b, kRecvGradientGroup, true, k, j, k + 1, global, consumed(k, j),
                              layout(k, global.id), ch.dout_recv_nodes);
      map[local.value[global.id]] = v.id;
    }
    b.pop_scope();
    copy_into(prog.graph, local.graph, prefix, map);

    for (const LocalGraph::Source& s : local.parameters) {
      const Node& global = sg.graph.node(s.global);
      ch.param_names.push_back(global.name);
      ch.param_nodes.push_back(map[s.local]);
      ch.param_layouts.push_back(s.layout);
      ch.param_shapes.push_back(global.shape);
    }
    for (size_t i = 0; i < sg.data_inputs.size(); ++i) {
      const int local_id = local.value[sg.data_inputs[i]];
      if (local_id < 0) continue;  // read only by ops the objective does not need
      ch.data_inputs.push_back(map[local_id]);
      ch.data_names.push_back(sg.data_names[i]);
      ch.data_layouts.push_back(layout(k, sg.data_inputs[i]));
    }
    if (sg.loss >= 0) ch.loss = map[local.value[sg.loss]];
    for (int u : sg.state_updates)
      if (local.value[u] >= 0) ch.state_updates.push_back(map[local.value[u]]);

    b.push_scope(prefix + "Pipeline");
    std::vector<int>& acts = chunk_act_sends.emplace_back();
    for (size_t j = 0; j < sg.send_outputs.size(); ++j) {
      const Node& global = sg.graph.node(sg.send_outputs[j]);
      send(b, Value{map[local.value[global.id]]}, false, k + 1, j, global, made(k, j), consumed(k, j), acts);
    }
    b.pop_scope();

    b.push_scope(prefix + "Gradients");
    const Value objective{map[local.value[sg.objective]]};
    const Value seed = b.mul(objective, b.fill({}, gradient_scale / static_cast<float>(opts.per_stage)));
    std::vector<int> wrt = ch.param_nodes;
    wrt.insert(wrt.end(), recv_values.begin(), recv_values.end());
    const std::vector<int> grads = gradients(prog.graph, seed.id, wrt);
    ch.param_grads.assign(grads.begin(), grads.begin() + static_cast<std::ptrdiff_t>(ch.param_nodes.size()));
    std::vector<int>& back = chunk_grad_sends.emplace_back();
    for (size_t j = 0; j < sg.recv_inputs.size(); ++j) {
      const Node& global = sg.graph.node(sg.recv_inputs[j]);
      const TensorLayout& held = consumed(k - 1, j);
      Value g{grads[ch.param_nodes.size() + j]};
      // Each holder of a block has a share of its gradient (the file comment): sum them first.
      const std::vector<int> replicas = held.replica_group(prog.local_rank);
      if (replicas.size() > 1) {
        const std::string name = group_name(replicas);
        add_groups({{name, replicas}});
        g = CollectiveBuilder(b, {name, static_cast<int64_t>(replicas.size())}).all_reduce(g);
      }
      send(b, g, true, k - 1, j, global, held, layout(k - 1, stages[k - 1].dout_inputs[j]), back);
    }
    b.pop_scope();
  }

  void phases(bool split) {
    const Graph& g = prog.graph;
    const int v = schedule.chunks;
    prog.stream.phases = v * kPhaseKinds;
    prog.stream.cycle = schedule.micro_batches;
    prog.stream.phase_of.assign(g.size(), -1);
    prog.stream.registers.assign(g.size(), 0);
    std::vector<char> posted(g.size(), 0);  // Receives and their virtual inputs
    for (const auto& ch : prog.chunks)
      for (const auto* list : {&ch.recv_nodes, &ch.dout_recv_nodes})
        for (int id : *list) {
          posted[id] = 1;
          for (int in : g.node(id).inputs) posted[in] = 1;
        }
    const std::vector<int> peak = peak_in_flight(schedule, prog.stage, split);
    for (int c = 0; c < v; ++c) {
      const StageProgram::Chunk& ch = prog.chunks[c];
      std::vector<int> f_roots = chunk_act_sends[c], b_roots = chunk_grad_sends[c];
      if (ch.loss >= 0) f_roots.push_back(ch.loss);
      f_roots.insert(f_roots.end(), ch.state_updates.begin(), ch.state_updates.end());
      std::vector<int> w_roots = ch.param_grads;
      if (!split) b_roots.insert(b_roots.end(), w_roots.begin(), w_roots.end());
      const std::vector<std::vector<int>> roots{f_roots, b_roots, split ? w_roots : std::vector<int>{}};
      for (int kind = 0; kind < kPhaseKinds; ++kind) {
        if (roots[kind].empty()) continue;
        for (int id : needed_nodes(g, roots[kind])) {
          if (posted[id] || g.node(id).def->is_source() || prog.stream.phase_of[id] >= 0) continue;
          prog.stream.phase_of[id] = c * kPhaseKinds + kind;
        }
      }
    }
    // A value another phase reads (a stash, or a received activation B reads again) stays in its
    // register until then: as many as the reading chunk has micro-batches in flight, and one more.
    const auto consumers = g.consumers();
    for (int id = 0; id < g.size(); ++id) {
      const int ph = prog.stream.phase_of[id];
      for (int u : consumers[id]) {
        const int other = prog.stream.phase_of[u];
        if (other >= 0 && other != ph)
          prog.stream.registers[id] = std::max(prog.stream.registers[id], peak[other / kPhaseKinds] + 1);
      }
    }
  }

  void collective_order() {
    const Graph& g = prog.graph;
    const std::vector<char> needed = mask_of(g, needed_nodes(g, prog.fetches));
    std::vector<std::vector<int>> by_phase(prog.stream.phases);
    for (int id = 0; id < g.size(); ++id)
      if (needed[id] && is_collective(g.node(id)) && prog.stream.phase_of[id] >= 0)
        by_phase[prog.stream.phase_of[id]].push_back(id);
    auto add = [&](int64_t micro, const std::vector<int>& ids) {
      for (int id : ids)
        if (needed[id]) prog.stream.collective_order[group_of(g.node(id)).name].emplace_back(micro, id);
    };
    for (const Action& a : schedule.actions[prog.stage]) {
      const StageProgram::Chunk& ch = prog.chunks[a.chunk];
      switch (a.kind) {
        case ActionKind::kForward: add(a.micro_batch, by_phase[a.chunk * kPhaseKinds + kPhaseForward]); break;
        case ActionKind::kBackward: add(a.micro_batch, by_phase[a.chunk * kPhaseKinds + kPhaseBackward]); break;
        case ActionKind::kWeight: add(a.micro_batch, by_phase[a.chunk * kPhaseKinds + kPhaseWeight]); break;
        case ActionKind::kRecvActivation: add(a.micro_batch, ch.recv_nodes); break;
        case ActionKind::kRecvGradient: add(a.micro_batch, ch.dout_recv_nodes); break;
        default: break;  // Sends run with the phase that makes their value
      }
    }
  }
};

}  // namespace

StageProgram build_stage_program(const std::vector<StageGraph>& stages, const Schedule& schedule,
                                 const StrategyTable& table, int rank, const StageProgramOptions& opts) {
  const int p = schedule.stages;
  const int V = p * schedule.chunks;
  SF_ENFORCE(static_cast<int>(stages.size()) == V, InvalidArgument,
             "pipeline: the network has {} stages but the schedule '{}' runs {} stages x {} chunks", stages.size(),
             schedule.name, p, schedule.chunks);
  Builder b(stages, schedule, opts);
  b.world = p * opts.per_stage;
  b.prog.stages = p;
  b.prog.per_stage = opts.per_stage;
  b.prog.stage = rank / opts.per_stage;
  b.prog.local_rank = rank % opts.per_stage;

  // The network's strategies name ops of every stage: each stage takes those of its own ops.
  std::set<std::string> used;
  for (const StageGraph& sg : stages) {
    StrategyTable mine;
    for (const auto& [op, s] : table)
      if (sg.graph.find(op) >= 0) {
        mine.emplace(op, s);
        used.insert(op);
      }
    std::vector<int> outputs{sg.objective};
    outputs.insert(outputs.end(), sg.state_updates.begin(), sg.state_updates.end());
    b.shardings.push_back(shard_graph(sg.graph, outputs, mine, opts.per_stage));
  }
  for (const auto& [op, s] : table)
    SF_ENFORCE(used.count(op), InvalidArgument, "pipeline: a strategy is given for '{}', which is no op of any stage",
               op);

  if (!opts.gradients_mean) {
    const StageGraph& first = stages[0];
    SF_ENFORCE(!first.data_inputs.empty(), InvalidArgument, "pipeline: the first stage reads no data");
    b.gradient_scale = static_cast<float>(b.layout(0, first.data_inputs[0]).splits(0));
  }
  for (int c = 0; c < schedule.chunks; ++c) b.build_chunk(c);
  StageProgram& prog = b.prog;
  for (int c = 0; c < schedule.chunks; ++c) {
    const StageProgram::Chunk& ch = prog.chunks[c];
    auto fetch = [&](const std::vector<int>& ids) { prog.fetches.insert(prog.fetches.end(), ids.begin(), ids.end()); };
    fetch(ch.param_grads);
    if (ch.loss >= 0) prog.fetches.push_back(ch.loss);
    fetch(b.chunk_act_sends[c]);
    fetch(b.chunk_grad_sends[c]);
    fetch(ch.state_updates);
    for (int id : b.chunk_act_sends[c]) prog.transfers[id] = {ActionKind::kSendActivation, c};
    for (int id : b.chunk_grad_sends[c]) prog.transfers[id] = {ActionKind::kSendGradient, c};
    for (int id : ch.recv_nodes) prog.transfers[id] = {ActionKind::kRecvActivation, c};
    for (int id : ch.dout_recv_nodes) prog.transfers[id] = {ActionKind::kRecvGradient, c};
  }
  b.phases(opts.split_backward);
  b.collective_order();
  b.prog.shardings = std::move(b.shardings);
  return std::move(b.prog);
}

}  // namespace sf::pipeline
