// The rank's thread walks the action list and admits phases to the streaming Runtime; the
// Runtime's actors run the ops, the stage's collectives and the transfers. Gradients and the loss
// are combined with collectives after the list.
#include <shardflow/pipeline/stage_runtime.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include <shardflow/actors/collective_context.h>
#include <shardflow/actors/runtime.h>
#include <shardflow/actors/trace.h>
#include <shardflow/comm/all_gather.h>
#include <shardflow/comm/all_reduce.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>
#include <shardflow/core/error_context.h>
#include <shardflow/ops/blas.h>
#include <shardflow/ops/collective_builder.h>
#include <shardflow/parallel/sharding/local_block.h>
#include <shardflow/pipeline/simulator.h>
#include <shardflow/pipeline/transfers.h>

namespace sf::pipeline {
namespace {

int64_t now_us() { return TraceRecorder::now_ns() / 1000; }

comm::Group group_of(const std::string& name, const std::vector<int>& ranks) {
  comm::RankContext& ctx = comm::current_rank();
  try {
    return ctx.group(name);
  } catch (const NotFound&) {
    return ctx.create_group(name, ranks);
  }
}

void add_into(Tensor& acc, const Tensor& g) {
  float* a = acc.f32();
  const float* x = g.f32();
  for (int64_t i = 0; i < acc.numel(); ++i) a[i] += x[i];
}

// Every rank's block of `shape` under `a` equals its block under `b`.
bool same_blocks(const TensorLayout& a, const TensorLayout& b, const Shape& shape, int ranks) {
  for (int r = 0; r < ranks; ++r)
    if (a.slice(shape, r) != b.slice(shape, r)) return false;
  return true;
}

}  // namespace

struct StageRuntime::Impl {
  std::shared_ptr<const std::vector<StageGraph>> stages;
  Schedule lowered;
  StageRuntimeOptions opts;
  int p = 1, v = 1, m = 1;
  StageProgram prog;
  std::shared_ptr<StreamSpec> spec;
  comm::Group world_group;

  std::vector<std::string> names;      // this rank's parameters
  std::vector<TensorLayout> layouts;   // per names
  std::vector<Shape> shapes;           // per names: whole shapes
  std::vector<std::vector<int>> chunk_index;  // [chunk][param of the chunk] -> index into names
  struct Role {
    int chunk = -1, param = -1;  // a gradient block; param -1: the loss
  };
  std::vector<Role> fetch_roles;            // by fetch index (chunk -1: nothing to keep)
  std::vector<std::vector<Tensor>> accumulated;  // [chunk][param of the chunk]: this step's sum
  float loss_sum = 0;
  // The step's end as a graph of its own, run on the actor runtime once per step: each gradient
  // block summed over the stages that share its parameter, then over the ranks of the stage
  // holding the same block (one flat bucket per group), and the loss over the world.
  Graph combine_graph;
  std::vector<int> combine_inputs;  // per names: its Input node
  int combine_loss = -1;            // the loss's Input node
  std::vector<int> combined;        // per combine fetch but the last (the loss): its index in names
  std::vector<size_t> stash_bytes;  // per chunk: bytes one micro-batch keeps between phases

  std::mutex span_mu;
  std::map<std::tuple<int, int, int64_t>, std::pair<int64_t, int64_t>> transfer_spans;  // (kind, chunk, micro)
  // The stage's own collectives (operator parallel) that ran this step, under span_mu; kept only
  // while record_timeline is on.
  struct CollectiveRun {
    int node = -1;
    int64_t step = 0;
    int64_t t0 = 0, t1 = 0;  // ns, TraceRecorder's clock
  };
  std::vector<CollectiveRun> collective_runs;
  Timeline timeline;
  // Last: its actors call back into the members above until it is destroyed.
  std::unique_ptr<Runtime> runtime;
  std::unique_ptr<Runtime> combine_runtime;

  void on_fetch(int f, const Tensor& t);
  void on_transfer(int node, int64_t step, int64_t t0, int64_t t1);
  void set_up_combine();
  float combine(std::vector<Tensor>& grads, float loss);
  void gather_timeline(const std::vector<Span>& mine, const std::vector<CollectiveSpan>& inside, int64_t start_us);
};

StageRuntime::StageRuntime(std::shared_ptr<const std::vector<StageGraph>> stages, const Schedule& schedule,
                           const ParamFn& param_value, StageRuntimeOptions opts)
    : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.stages = std::move(stages);
  im.opts = std::move(opts);
  im.p = schedule.stages;
  im.v = schedule.chunks;
  im.m = schedule.micro_batches;
  comm::RankContext& ctx = comm::current_rank();
  im.world_group = ctx.world();
  const int world = ctx.size();
  const int n = im.opts.per_stage;
  SF_ENFORCE(n >= 1 && im.p * n == world, InvalidArgument,
             "pipeline: {} stages x {} devices per stage = {} devices, but the job has {}; choose pipeline_stages "
             "and the stage's devices so that their product is the device count",
             im.p, n, im.p * n, world);
  SF_ENFORCE(static_cast<int>(im.stages->size()) == im.p * im.v, InvalidArgument,
             "pipeline: the network has {} stages but the schedule '{}' runs {} stages x {} chunks", im.stages->size(),
             schedule.name, im.p, im.v);
  SF_ENFORCE(im.p > 1 || im.v == 1, InvalidArgument,
             "pipeline: an interleaved schedule needs at least 2 stages, got 1 with {} chunks", im.v);
  // Stages (and the virtual devices of one process) call sgemm at the same time, each on its own
  // thread: a multi-threaded OpenBLAS would serialise them and spin its own threads.
  set_blas_threads(1);
  im.lowered = with_transfers(schedule);
  simulate_schedule(im.lowered);  // throws on an incomplete list or a deadlock, before any message
  im.prog = build_stage_program(*im.stages, im.lowered, im.opts.strategies, ctx.rank(),
                                {.per_stage = n, .split_backward = splits_backward(schedule),
                                 .gradients_mean = im.opts.gradients_mean});

  std::map<std::string, int> index;
  std::map<int, Impl::Role> roles;  // by fetched node id
  for (size_t c = 0; c < im.prog.chunks.size(); ++c) {
    const StageProgram::Chunk& ch = im.prog.chunks[c];
    auto& idx = im.chunk_index.emplace_back();
    for (size_t i = 0; i < ch.param_names.size(); ++i) {
      auto [it, fresh] = index.emplace(ch.param_names[i], static_cast<int>(im.names.size()));
      if (fresh) {
        im.names.push_back(ch.param_names[i]);
        im.layouts.push_back(ch.param_layouts[i]);
        im.shapes.push_back(ch.param_shapes[i]);
      } else {
        SF_ENFORCE(same_blocks(im.layouts[it->second], ch.param_layouts[i], ch.param_shapes[i], n), InvalidArgument,
                   "pipeline: parameter '{}' is read by two chunks of stage {} in different layouts; give its ops "
                   "strategies that cut it alike",
                   ch.param_names[i], im.prog.stage);
      }
      idx.push_back(it->second);
      roles[ch.param_grads[i]] = {static_cast<int>(c), static_cast<int>(i)};
    }
    if (ch.loss >= 0) roles[ch.loss] = {static_cast<int>(c), -1};
  }
  for (int id : im.prog.fetches) {
    auto it = roles.find(id);
    im.fetch_roles.push_back(it == roles.end() ? Impl::Role{} : it->second);
  }
  im.set_up_combine();

  // What one micro-batch keeps between phases: the values whose registers outlive their phase.
  im.stash_bytes.assign(im.v, 0);
  for (int id = 0; id < im.prog.graph.size(); ++id) {
    const int ph = im.prog.stream.phase_of[id];
    if (im.prog.stream.registers[id] > 0 && ph >= 0) {
      const Node& node = im.prog.graph.node(id);
      im.stash_bytes[ph / kPhaseKinds] += static_cast<size_t>(numel(node.shape)) * dtype_size(node.dtype);
    }
  }

  im.spec = std::make_shared<StreamSpec>(im.prog.stream);
  im.spec->on_fetch = [&im](int f, int64_t, const Tensor& t) { im.on_fetch(f, t); };
  im.spec->on_collective = [&im](int node, int64_t step, int64_t t0, int64_t t1) { im.on_transfer(node, step, t0, t1); };
  RuntimeOptions ropts{.threads = 1, .stream = im.spec};
  ropts.collectives.timeout = comm::default_timeout();
  for (const char* name : {kSendGroup, kRecvActivationGroup, kRecvGradientGroup})
    ropts.collectives.groups.emplace(name, im.world_group);
  for (const auto& [name, ranks] : im.prog.groups)
    ropts.collectives.groups.emplace(name, group_of(fmt::format("pipeline/stage{}/{}", im.prog.stage, name), ranks));
  im.runtime = std::make_unique<Runtime>(im.prog.graph, im.prog.fetches, ropts);
  for (size_t c = 0; c < im.prog.chunks.size(); ++c) {
    const StageProgram::Chunk& ch = im.prog.chunks[c];
    for (size_t i = 0; i < ch.param_nodes.size(); ++i)
      im.runtime->bind(ch.param_nodes[i], param_value(ch.param_names[i], ch.param_layouts[i], ch.param_shapes[i]));
  }
  im.timeline.stages = im.p;
  im.timeline.micro_batches = im.m;
  im.timeline.chunks = im.v;
  im.timeline.schedule = schedule.name;
  im.timeline.source = "measured";
  im.timeline.unit = "us";
}

StageRuntime::~StageRuntime() = default;

const std::vector<std::string>& StageRuntime::parameter_names() const { return impl_->names; }
const std::vector<TensorLayout>& StageRuntime::parameter_layouts() const { return impl_->layouts; }
int StageRuntime::stage() const { return impl_->prog.stage; }
int StageRuntime::replica() const { return impl_->prog.local_rank; }
const Schedule& StageRuntime::lowered_schedule() const { return impl_->lowered; }
const StageProgram& StageRuntime::program() const { return impl_->prog; }
const Timeline& StageRuntime::last_timeline() const { return impl_->timeline; }

void StageRuntime::Impl::set_up_combine() {
  const int n = opts.per_stage;
  // Parameters read on several physical stages: their gradients are summed over those, rank by
  // rank of the same local index, which must hold the same block on each.
  std::vector<std::pair<int, comm::Group>> shared;  // index in names -> the group of its stages
  std::map<std::string, std::set<int>> readers;
  for (const StageGraph& sg : *stages)
    for (const std::string& name : sg.param_names) readers[name].insert(sg.virtual_stage % p);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::set<int>& on = readers[names[i]];
    for (const StageGraph& sg : *stages) {
      const int id = sg.graph.find(names[i]);
      if (id < 0 || !prog.shardings[sg.virtual_stage].by_node.count(id)) continue;
      SF_ENFORCE(same_blocks(prog.shardings[sg.virtual_stage].at(id).layout, layouts[i], shapes[i], n),
                 InvalidArgument,
                 "pipeline: parameter '{}' is shared by stages {} and {} in different layouts; give its ops on both "
                 "stages strategies that cut it alike",
                 names[i], prog.stage, sg.virtual_stage % p);
    }
    if (on.size() < 2) continue;
    std::vector<int> ranks;
    std::string key;
    for (int s : on) {
      ranks.push_back(s * n + prog.local_rank);
      key += fmt::format("_{}", s);
    }
    shared.emplace_back(static_cast<int>(i),
                        group_of(fmt::format("pipeline_shared{}_local{}of{}", key, prog.local_rank, n), ranks));
  }
  // Every block is summed over the ranks of the stage holding the same block.
  std::vector<std::pair<comm::Group, std::vector<int>>> mirror;  // replica group -> indices in names
  std::map<std::vector<int>, std::vector<int>> by_group;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::vector<int> replicas = layouts[i].replica_group(prog.local_rank);
    if (replicas.size() > 1) by_group[replicas].push_back(static_cast<int>(i));
  }
  for (const auto& [replicas, ids] : by_group) {
    std::vector<int> ranks;
    std::string key;
    for (int r : replicas) {
      ranks.push_back(prog.stage * n + r);
      key += fmt::format("_{}", r);
    }
    mirror.emplace_back(group_of(fmt::format("pipeline_mirror{}_stage{}of{}", key, prog.stage, n), ranks), ids);
  }

  GraphBuilder b(combine_graph);
  CollectiveContext groups;
  groups.add(world_group);
  std::vector<Value> grad;
  std::vector<bool> reduced(names.size(), false);
  for (size_t i = 0; i < names.size(); ++i) {
    grad.push_back(b.input("grad/" + names[i], layouts[i].local_shape(shapes[i])));
    combine_inputs.push_back(grad.back().id);
  }
  for (auto& [i, group] : shared) {
    if (!groups.find(group.name())) groups.add(group);
    grad[i] = CollectiveBuilder(b, group_ref(group)).all_reduce(grad[i]);
    reduced[i] = true;
  }
  for (auto& [group, ids] : mirror) {
    if (!groups.find(group.name())) groups.add(group);
    std::vector<Value> flat;
    for (int i : ids) flat.push_back(b.reshape(grad[i], {numel(b.shape(grad[i]))}));
    Value bucket = CollectiveBuilder(b, group_ref(group)).all_reduce(flat.size() == 1 ? flat[0] : b.concat(flat));
    int64_t at = 0;
    for (int i : ids) {
      const Shape shape = b.shape(grad[i]);
      const int64_t count = numel(shape);
      grad[i] = b.reshape(b.strided_slice(bucket, {at}, {at + count}), shape);
      reduced[i] = true;
      at += count;
    }
  }
  std::vector<int> fetches;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!reduced[i]) continue;
    combined.push_back(static_cast<int>(i));
    fetches.push_back(grad[i].id);
  }
  const Value loss = b.input("loss", {});
  combine_loss = loss.id;
  fetches.push_back(CollectiveBuilder(b, group_ref(world_group)).all_reduce(loss).id);
  RuntimeOptions ropts{.threads = 1, .collectives = groups};
  ropts.collectives.timeout = comm::default_timeout();
  combine_runtime = std::make_unique<Runtime>(combine_graph, fetches, ropts);
}

void StageRuntime::Impl::on_fetch(int f, const Tensor& t) {
  const Role& r = fetch_roles[f];
  if (r.chunk < 0) return;  // a Send's token or a state update
  if (r.param < 0) {
    loss_sum += t.item();
    return;
  }
  Tensor& acc = accumulated[r.chunk][r.param];
  if (!acc.defined())
    acc = t.clone();  // micro-batch 0: the register is reused, so keep a copy
  else
    add_into(acc, t);  // in micro-batch order: one actor delivers them, one at a time
}

void StageRuntime::Impl::on_transfer(int node, int64_t step, int64_t t0, int64_t t1) {
  auto it = prog.transfers.find(node);
  if (it == prog.transfers.end()) {
    // A collective inside the stage: only the timeline wants it.
    if (!opts.record_timeline) return;
    std::lock_guard<std::mutex> lk(span_mu);
    collective_runs.push_back({node, step, t0, t1});
    return;
  }
  const auto key = std::make_tuple(static_cast<int>(it->second.first), it->second.second, step % m);
  std::lock_guard<std::mutex> lk(span_mu);
  auto [span, fresh] = transfer_spans.emplace(key, std::make_pair(t0, t1));
  if (!fresh) span->second = {std::min(span->second.first, t0), std::max(span->second.second, t1)};
}

StepResult StageRuntime::run_step(const FeedFn& feed) {
  Impl& im = *impl_;
  StepResult result;
  im.accumulated.assign(im.prog.chunks.size(), {});
  for (size_t c = 0; c < im.prog.chunks.size(); ++c) im.accumulated[c].resize(im.prog.chunks[c].param_names.size());
  im.loss_sum = 0;
  {
    std::lock_guard<std::mutex> lk(im.span_mu);
    im.transfer_spans.clear();
    im.collective_runs.clear();
  }
  std::vector<std::pair<Action, std::pair<int64_t, int64_t>>> computed;  // compute spans, µs
  std::vector<int> in_flight(im.v, 0);
  const int64_t start = now_us();
  const bool split = splits_backward(im.lowered);

  auto run_action = [&](const Action& a) {
    const StageProgram::Chunk& ch = im.prog.chunks[a.chunk];
    int kind = -1;
    Runtime::Feeds feeds;
    switch (a.kind) {
      case ActionKind::kForward:
        kind = kPhaseForward;
        for (size_t i = 0; i < ch.data_inputs.size(); ++i)
          feeds.emplace_back(ch.data_inputs[i],
                             local_block(feed(a.micro_batch, ch.data_names[i]), ch.data_layouts[i], im.prog.local_rank));
        break;
      case ActionKind::kBackward: kind = kPhaseBackward; break;
      case ActionKind::kWeight: kind = kPhaseWeight; break;
      default: return;  // transfers run on their own actors
    }
    const int phase = a.chunk * kPhaseKinds + kind;
    const int64_t t0 = now_us();
    im.runtime->admit(phase, a.micro_batch, feeds);
    if (kind == kPhaseForward) {
      ++in_flight[a.chunk];
      int total = 0;
      size_t bytes = 0;
      for (int c = 0; c < im.v; ++c) {
        total += in_flight[c];
        bytes += static_cast<size_t>(in_flight[c]) * im.stash_bytes[c];
      }
      result.peak_in_flight = std::max(result.peak_in_flight, total);
      result.peak_stashed_bytes = std::max(result.peak_stashed_bytes, bytes);
    }
    im.runtime->wait(phase, a.micro_batch);
    if (kind == (split ? kPhaseWeight : kPhaseBackward)) --in_flight[a.chunk];
    // The span starts when the phase began to compute, not when it was admitted: an admitted F
    // may wait for its activation, and that wait is the bubble, not work.
    const int64_t began = im.runtime->phase_started_ns(phase, a.micro_batch);
    const int64_t from = began < 0 ? t0 : std::max(t0, began / 1000);
    computed.push_back({a, {from - start, now_us() - start}});
  };

  im.runtime->begin_cycle();
  for (const Action& a : im.lowered.actions[im.prog.stage]) {
    try {
      run_action(a);
    } catch (...) {
      // The error as thrown (a PeerLost keeps its rank), naming the stage and the action.
      std::rethrow_exception(
          current_error_with_context(fmt::format("pipeline: stage {}, {}", im.prog.stage, to_string(a))));
    }
  }

  for (size_t i = 0; i < im.names.size(); ++i) result.grads.push_back(Tensor::zeros(im.layouts[i].local_shape(im.shapes[i])));
  for (size_t c = 0; c < im.prog.chunks.size(); ++c)
    for (size_t i = 0; i < im.accumulated[c].size(); ++i)
      if (im.accumulated[c][i].defined()) add_into(result.grads[im.chunk_index[c][i]], im.accumulated[c][i]);

  const bool last = im.prog.stage == im.p - 1 && im.prog.local_rank == 0;
  try {
    result.loss = im.combine(result.grads, last ? im.loss_sum : 0.0f);
  } catch (...) {
    std::rethrow_exception(current_error_with_context(
        fmt::format("pipeline: stage {}, reducing the gradients and the loss", im.prog.stage)));
  }
  if (im.opts.record_timeline) {
    // The list's spans in its order: compute as admitted and run, transfers as their actors ran them.
    std::vector<Span> spans;
    size_t next = 0;
    double previous = 0;
    std::lock_guard<std::mutex> lk(im.span_mu);
    for (const Action& a : im.lowered.actions[im.prog.stage]) {
      if (next < computed.size() && computed[next].first == a) {
        const auto [b, e] = computed[next++].second;
        spans.push_back({a, static_cast<double>(b), static_cast<double>(e)});
      } else {
        auto it = im.transfer_spans.find({static_cast<int>(a.kind), a.chunk, a.micro_batch});
        if (it == im.transfer_spans.end()) {
          spans.push_back({a, previous, previous});  // this rank sends none of the value's pieces
        } else {
          spans.push_back({a, static_cast<double>(it->second.first / 1000 - start),
                           static_cast<double>(it->second.second / 1000 - start)});
        }
      }
      previous = spans.back().finish;
    }
    // The stage's collectives, each in the phase of its node; every one has a phase (the
    // runtime orders a group's collectives by the phases that run them).
    std::vector<CollectiveSpan> inside;
    for (const Impl::CollectiveRun& run : im.collective_runs) {
      const int ph = im.prog.stream.phase_of[run.node];
      if (ph < 0) continue;
      const Node& n = im.prog.graph.node(run.node);
      inside.push_back({.op = n.op,
                        .group = n.attrs.get_str("group"),
                        .micro_batch = static_cast<int>(run.step % im.m),
                        .chunk = ph / kPhaseKinds,
                        .phase = "FBW"[ph % kPhaseKinds],
                        .start = static_cast<double>(run.t0 - start * 1000) / 1000,
                        .finish = static_cast<double>(run.t1 - start * 1000) / 1000});
    }
    std::stable_sort(inside.begin(), inside.end(),
                     [](const CollectiveSpan& a, const CollectiveSpan& b) { return a.start < b.start; });
    im.gather_timeline(spans, inside, start);
  }
  return result;
}

float StageRuntime::Impl::combine(std::vector<Tensor>& grads, float loss) {
  Runtime::Feeds feeds;
  for (size_t i = 0; i < grads.size(); ++i) feeds.emplace_back(combine_inputs[i], grads[i]);
  feeds.emplace_back(combine_loss, Tensor::scalar(loss));
  const std::vector<Tensor>& out = combine_runtime->run(feeds);
  for (size_t k = 0; k < combined.size(); ++k) grads[combined[k]] = out[k].clone();  // valid until the next run
  return out.back().item();
}

namespace {

// An int64 as two int32s (high, low 30 bits) and back, as gather_timeline sends it.
int32_t high_of(int64_t v) { return static_cast<int32_t>(v >> 30); }
int32_t low_of(int64_t v) { return static_cast<int32_t>(v & ((int64_t{1} << 30) - 1)); }
int64_t joined(const int32_t* e) { return (int64_t{e[0]} << 30) + e[1]; }

constexpr int kCollectiveInts = 9;  // op, group, micro, chunk, phase, start (2), finish (2)

// The collectives' part of a gather_timeline row: [count, strings, then per collective its op
// and group (indices into the string table), micro-batch, chunk, phase and its start and
// finish in ns from the rank's step start (high, low each), then the table's characters, each
// string ending in 0]. Names travel as text: the other ranks' graphs are not this rank's.
std::vector<int32_t> encode_collectives(const std::vector<CollectiveSpan>& inside) {
  std::vector<std::string> table;
  const auto index_of = [&](const std::string& text) {
    const auto it = std::find(table.begin(), table.end(), text);
    if (it != table.end()) return static_cast<int32_t>(it - table.begin());
    table.push_back(text);
    return static_cast<int32_t>(table.size() - 1);
  };
  std::vector<int32_t> out = {static_cast<int32_t>(inside.size()), 0};
  for (const CollectiveSpan& c : inside) {
    const int64_t b = std::llround(c.start * 1000), e = std::llround(c.finish * 1000);
    const int32_t op = index_of(c.op), group = index_of(c.group);
    out.insert(out.end(), {op, group, c.micro_batch, c.chunk, static_cast<int32_t>(c.phase), high_of(b), low_of(b),
                           high_of(e), low_of(e)});
  }
  out[1] = static_cast<int32_t>(table.size());
  for (const std::string& text : table) {
    for (char ch : text) out.push_back(static_cast<unsigned char>(ch));
    out.push_back(0);
  }
  return out;
}

// encode_collectives' section back, times shifted by `shift` µs.
std::vector<CollectiveSpan> decode_collectives(const int32_t* x, double shift) {
  const int count = x[0], strings = x[1];
  const int32_t* chars = x + 2 + kCollectiveInts * count;
  std::vector<std::string> table(strings);
  for (std::string& text : table) {
    while (*chars != 0) text += static_cast<char>(*chars++);
    ++chars;
  }
  std::vector<CollectiveSpan> out;
  for (int i = 0; i < count; ++i) {
    const int32_t* e = x + 2 + kCollectiveInts * i;
    out.push_back({.op = table.at(e[0]),
                   .group = table.at(e[1]),
                   .micro_batch = e[2],
                   .chunk = e[3],
                   .phase = static_cast<char>(e[4]),
                   .start = static_cast<double>(joined(e + 5)) / 1000 + shift,
                   .finish = static_cast<double>(joined(e + 7)) / 1000 + shift});
  }
  return out;
}

}  // namespace

void StageRuntime::Impl::gather_timeline(const std::vector<Span>& mine, const std::vector<CollectiveSpan>& inside,
                                         int64_t start_us) {
  // Every rank sends [start high, start low, then kind, micro, chunk, start, finish per span],
  // padded to the longest list; times are µs, relative to the rank's own step start. Then its
  // stage's collectives (encode_collectives; local rank 0's, the others send none) padded to
  // the longest such section, which the ranks agree on first: an all_gather takes equal rows.
  size_t longest = 0;
  for (const auto& list : lowered.actions) longest = std::max(longest, list.size());
  const std::vector<int32_t> section = prog.local_rank == 0 ? encode_collectives(inside) : std::vector<int32_t>{0, 0};
  Tensor need = Tensor::zeros({1}, DType::kI32);
  need.i32()[0] = static_cast<int32_t>(section.size());
  need = comm::all_reduce(need, {.group = world_group, .op = comm::ReduceOp::kMax});
  const int64_t spans_width = 2 + 5 * static_cast<int64_t>(longest);
  const int64_t width = spans_width + need.i32()[0];
  Tensor row = Tensor::zeros({1, width}, DType::kI32);
  int32_t* r = row.i32();
  std::copy(section.begin(), section.end(), r + spans_width);
  r[0] = high_of(start_us);
  r[1] = low_of(start_us);
  for (size_t i = 0; i < mine.size(); ++i) {
    int32_t* e = r + 2 + 5 * i;
    e[0] = static_cast<int32_t>(mine[i].action.kind);
    e[1] = mine[i].action.micro_batch;
    e[2] = mine[i].action.chunk;
    e[3] = static_cast<int32_t>(mine[i].start);
    e[4] = static_cast<int32_t>(mine[i].finish);
  }
  const Tensor all = comm::all_gather(row, {.group = world_group});
  const int32_t* x = all.i32();
  const int n = opts.per_stage;
  auto origin = [&](int rank) { return joined(x + rank * width); };
  int64_t base = origin(0);
  for (int s = 0; s < p; ++s) base = std::min(base, origin(s * n));
  timeline.spans.assign(p, {});
  timeline.collectives.assign(p, {});
  for (int s = 0; s < p; ++s) {
    const int rank = s * n;  // local rank 0 of each stage
    const double shift = static_cast<double>(origin(rank) - base);
    for (size_t i = 0; i < lowered.actions[s].size(); ++i) {
      const int32_t* e = x + rank * width + 2 + 5 * i;
      timeline.spans[s].push_back({Action{static_cast<ActionKind>(e[0]), e[1], e[2]}, e[3] + shift, e[4] + shift});
    }
    timeline.collectives[s] = decode_collectives(x + rank * width + spans_width, shift);
  }
}

}  // namespace sf::pipeline
