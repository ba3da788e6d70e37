// The stage actor is a caf::scoped_actor on the rank's thread: it does the blocking comm calls
// (which need the rank's thread) and asks micro-batch actors, running on the rank's own actor
// system, for each phase. Gradients and the loss are combined with collectives after the list.
#include <shardflow/pipeline/stage_runtime.h>

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <set>

#include <shardflow/comm/all_gather.h>
#include <shardflow/comm/all_reduce.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/comm/send_recv.h>
#include <shardflow/core/error.h>
#include <shardflow/core/error_context.h>
#include <shardflow/ops/blas.h>
#include <shardflow/pipeline/messages.h>
#include <shardflow/pipeline/micro_batch_actor.h>
#include <shardflow/pipeline/simulator.h>
#include <shardflow/pipeline/transfers.h>

namespace sf::pipeline {
namespace {

caf::actor_system_config one_thread_config() {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", size_t{1});
  cfg.set("logger.verbosity", caf::atom("quiet"));
  return cfg;
}

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

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

}  // namespace

struct StageRuntime::Impl {
  std::shared_ptr<const std::vector<StageGraph>> stages;
  Schedule lowered;
  StageRuntimeOptions opts;
  int p = 1, v = 1, m = 1, stage = 0, replica = 0, world = 1;
  comm::Group world_group;
  std::optional<comm::Group> dp_group;
  std::vector<std::pair<int, comm::Group>> shared;  // index in `names` -> the group of its stages
  std::vector<std::string> names;                           // this rank's parameters
  std::vector<Tensor> values;                               // per names
  std::vector<std::vector<Tensor>> chunk_params;            // [chunk] per its stage's param_nodes
  std::vector<std::vector<int>> chunk_index;                // [chunk] -> index into names
  caf::actor_system_config cfg = one_thread_config();
  caf::actor_system sys{cfg};
  Timeline timeline;

  const StageGraph& graph(int chunk) const { return (*stages)[chunk * p + stage]; }
  int peer_rank(int virtual_stage) const { return (virtual_stage % p) * opts.dp + replica; }
  int64_t tag(int direction, int receiver_virtual_stage, int micro) const {
    return (static_cast<int64_t>(direction) * p * v + receiver_virtual_stage) * m + micro;
  }
  void combine(std::vector<Tensor>& grads);
  void gather_timeline(const std::vector<Span>& mine, int64_t start_us);
};

StageRuntime::StageRuntime(std::shared_ptr<const std::vector<StageGraph>> stages, const Schedule& schedule,
                           const std::function<Tensor(const std::string&)>& param_value, StageRuntimeOptions opts)
    : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.stages = std::move(stages);
  im.opts = opts;
  im.p = schedule.stages;
  im.v = schedule.chunks;
  im.m = schedule.micro_batches;
  comm::RankContext& ctx = comm::current_rank();
  im.world_group = ctx.world();
  im.world = ctx.size();
  SF_ENFORCE(opts.dp >= 1 && im.p * opts.dp == im.world, InvalidArgument,
             "pipeline: {} stages x {} data-parallel replicas = {} devices, but the job has {}; choose "
             "pipeline_stages and the data-parallel degree so that their product is the device count",
             im.p, opts.dp, im.p * opts.dp, im.world);
  SF_ENFORCE(static_cast<int>(im.stages->size()) == im.p * im.v, InvalidArgument,
             "pipeline: the network has {} stages but the schedule '{}' runs {} stages x {} chunks", im.stages->size(),
             schedule.name, im.p, im.v);
  SF_ENFORCE(im.p > 1 || im.v == 1, InvalidArgument,
             "pipeline: an interleaved schedule needs at least 2 stages, got 1 with {} chunks", im.v);
  im.stage = ctx.rank() / opts.dp;
  im.replica = ctx.rank() % opts.dp;
  // Stages (and the virtual devices of one process) call sgemm at the same time, each on its own
  // thread: a multi-threaded OpenBLAS would serialise them and spin its own threads.
  set_blas_threads(1);
  im.lowered = with_transfers(schedule);
  simulate_schedule(im.lowered);  // throws on an incomplete list or a deadlock, before any message
  const bool split = splits_backward(schedule);
  for (int c = 0; c < im.v; ++c)
    SF_ENFORCE(im.graph(c).split_backward == split, InvalidArgument,
               "pipeline: the stages were split {} a separate weight pass but schedule '{}' {} one",
               split ? "without" : "with", schedule.name, split ? "has" : "has no");

  std::map<std::string, int> index;
  im.chunk_params.resize(im.v);
  im.chunk_index.resize(im.v);
  for (int c = 0; c < im.v; ++c) {
    for (const std::string& name : im.graph(c).param_names) {
      auto [it, fresh] = index.emplace(name, static_cast<int>(im.names.size()));
      if (fresh) {
        im.names.push_back(name);
        im.values.push_back(param_value(name));
      }
      im.chunk_index[c].push_back(it->second);
      im.chunk_params[c].push_back(im.values[it->second]);
    }
  }
  if (opts.dp > 1) {
    std::vector<int> ranks;
    for (int j = 0; j < opts.dp; ++j) ranks.push_back(im.stage * opts.dp + j);
    im.dp_group = group_of(fmt::format("pipeline_dp{}_stage{}", opts.dp, im.stage), ranks);
  }
  // Parameters read on several (physical) stages: their gradients are summed over those.
  std::map<std::string, std::set<int>> readers;
  for (const StageGraph& sg : *im.stages)
    for (const std::string& name : sg.param_names) readers[name].insert(sg.virtual_stage % im.p);
  for (const auto& [name, on] : readers) {
    if (on.size() < 2 || !on.count(im.stage)) continue;
    std::vector<int> ranks;
    std::string key;
    for (int s : on) {
      ranks.push_back(s * opts.dp + im.replica);
      key += fmt::format("_{}", s);
    }
    im.shared.emplace_back(index.at(name),
                           group_of(fmt::format("pipeline_shared{}_replica{}", key, im.replica), ranks));
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
int StageRuntime::stage() const { return impl_->stage; }
int StageRuntime::replica() const { return impl_->replica; }
const Schedule& StageRuntime::lowered_schedule() const { return impl_->lowered; }
const Timeline& StageRuntime::last_timeline() const { return impl_->timeline; }

StepResult StageRuntime::run_step(const FeedFn& feed) {
  Impl& im = *impl_;
  StepResult result;
  result.grads.reserve(im.values.size());
  for (const Tensor& t : im.values) result.grads.push_back(Tensor::zeros(t.shape()));
  caf::scoped_actor self{im.sys};
  struct Live {
    caf::actor actor;
    size_t stashed = 0;
  };
  std::map<std::pair<int, int>, Live> live;                 // (chunk, micro) -> its actor
  std::map<std::pair<int, int>, std::vector<Tensor>> held;  // received or to be sent
  std::map<std::pair<int, int>, std::vector<Tensor>> grads_in;
  float loss_sum = 0;
  std::vector<Span> spans;
  const int64_t start = now_us();

  auto ask = [&](const std::pair<int, int>& key, PhaseRequest req) {
    PhaseReply reply;
    self->request(live.at(key).actor, caf::infinite, std::move(req))
        .receive([&](PhaseReply& r) { reply = std::move(r); },
                 [&](caf::error& err) { reply.error = std::make_exception_ptr(Error(im.sys.render(err))); });
    if (reply.error) std::rethrow_exception(reply.error);
    live.at(key).stashed = reply.stashed_bytes;
    size_t total = 0;
    for (const auto& [k, l] : live) total += l.stashed;
    result.peak_stashed_bytes = std::max(result.peak_stashed_bytes, total);
    return reply;
  };
  auto accumulate = [&](int chunk, const std::vector<Tensor>& g) {
    for (size_t i = 0; i < g.size(); ++i) add_into(result.grads[im.chunk_index[chunk][i]], g[i]);
  };
  auto finish = [&](const std::pair<int, int>& key) {
    caf::anon_send_exit(live.at(key).actor, caf::exit_reason::user_shutdown);
    live.erase(key);
  };

  auto run_action = [&](const Action& a) {
    const std::pair<int, int> key{a.chunk, a.micro_batch};
    const StageGraph& sg = im.graph(a.chunk);
    const int k = sg.virtual_stage;
    switch (a.kind) {
      case ActionKind::kRecvActivation: {
        std::vector<Tensor>& in = held[key];
        for (int id : sg.recv_inputs) {
          const Node& n = sg.graph.node(id);
          in.push_back(comm::receive({.group = im.world_group, .src = im.peer_rank(k - 1),
                                      .sr_tag = im.tag(0, k, a.micro_batch), .shape = n.shape, .dtype = n.dtype}));
        }
        break;
      }
      case ActionKind::kForward: {
        std::vector<Tensor> data;
        for (const std::string& name : sg.data_names) data.push_back(feed(a.micro_batch, name));
        auto mb = std::make_shared<MicroBatch>(sg, im.chunk_params[a.chunk]);
        // Detached: the actor's own thread sleeps on its mailbox and wakes the moment a request
        // comes, where a pooled worker that found no work backs off into sleeps of up to 10 ms.
        live[key].actor = im.sys.spawn<caf::detached>(micro_batch_actor, mb);
        result.peak_in_flight = std::max(result.peak_in_flight, static_cast<int>(live.size()));
        std::vector<Tensor> received = std::move(held[key]);
        held.erase(key);
        PhaseReply r = ask(key, {ActionKind::kForward, std::move(data), std::move(received)});
        if (!r.b.empty()) loss_sum += r.b[0].item();
        held[key] = std::move(r.a);
        break;
      }
      case ActionKind::kSendActivation:
        for (const Tensor& t : held.at(key))
          comm::send(t, {.group = im.world_group, .dest = im.peer_rank(k + 1), .sr_tag = im.tag(0, k + 1, a.micro_batch)});
        held.erase(key);
        break;
      case ActionKind::kRecvGradient: {
        std::vector<Tensor>& in = grads_in[key];
        for (int id : sg.dout_inputs) {
          const Node& n = sg.graph.node(id);
          in.push_back(comm::receive({.group = im.world_group, .src = im.peer_rank(k + 1),
                                      .sr_tag = im.tag(1, k, a.micro_batch), .shape = n.shape, .dtype = n.dtype}));
        }
        break;
      }
      case ActionKind::kBackward: {
        std::vector<Tensor> douts = std::move(grads_in[key]);
        grads_in.erase(key);
        PhaseReply r = ask(key, {ActionKind::kBackward, std::move(douts), {}});
        accumulate(a.chunk, r.b);
        held[key] = std::move(r.a);
        if (!sg.split_backward) finish(key);
        break;
      }
      case ActionKind::kSendGradient:
        for (const Tensor& t : held.at(key))
          comm::send(t, {.group = im.world_group, .dest = im.peer_rank(k - 1), .sr_tag = im.tag(1, k - 1, a.micro_batch)});
        held.erase(key);
        break;
      case ActionKind::kWeight: {
        PhaseReply r = ask(key, {ActionKind::kWeight, {}, {}});
        accumulate(a.chunk, r.b);
        finish(key);
        break;
      }
    }
  };

  for (const Action& a : im.lowered.actions[im.stage]) {
    const int64_t t0 = now_us();
    try {
      run_action(a);
    } catch (...) {
      // The error as thrown (a PeerLost keeps its rank), naming the stage and the action.
      std::rethrow_exception(current_error_with_context(fmt::format("pipeline: stage {}, {}", im.stage, to_string(a))));
    }
    spans.push_back({a, static_cast<double>(t0 - start), static_cast<double>(now_us() - start)});
  }
  SF_ENFORCE(live.empty(), Error, "pipeline: stage {} ended its list with {} micro-batches still in flight",
             im.stage, live.size());

  const bool last = im.stage == im.p - 1;
  Tensor loss;
  try {
    im.combine(result.grads);
    loss = comm::all_reduce(Tensor::scalar(last ? loss_sum : 0.0f), {.group = im.world_group});
  } catch (...) {
    std::rethrow_exception(
        current_error_with_context(fmt::format("pipeline: stage {}, reducing the gradients and the loss", im.stage)));
  }
  result.loss = loss.item() / static_cast<float>(im.opts.dp);
  if (im.opts.record_timeline) im.gather_timeline(spans, start);
  return result;
}

void StageRuntime::Impl::combine(std::vector<Tensor>& grads) {
  for (auto& [i, group] : shared) grads[i] = comm::all_reduce(grads[i], {.group = group});
  if (!dp_group || grads.empty()) return;
  int64_t total = 0;
  for (const Tensor& g : grads) total += g.numel();
  Tensor flat = Tensor::empty({total});
  int64_t at = 0;
  for (const Tensor& g : grads) {
    std::copy(g.f32(), g.f32() + g.numel(), flat.f32() + at);
    at += g.numel();
  }
  flat = comm::all_reduce(flat, {.group = *dp_group});
  const float scale = opts.gradients_mean ? 1.0f / static_cast<float>(opts.dp) : 1.0f;
  at = 0;
  for (Tensor& g : grads) {
    const float* src = flat.f32() + at;
    float* dst = g.f32();
    for (int64_t i = 0; i < g.numel(); ++i) dst[i] = src[i] * scale;
    at += g.numel();
  }
}

void StageRuntime::Impl::gather_timeline(const std::vector<Span>& mine, int64_t start_us) {
  // Every rank sends [start high, start low, then kind, micro, chunk, start, finish per span],
  // padded to the longest list; times are µs, relative to the rank's own step start.
  size_t longest = 0;
  for (const auto& list : lowered.actions) longest = std::max(longest, list.size());
  const int64_t width = 2 + 5 * static_cast<int64_t>(longest);
  Tensor row = Tensor::zeros({1, width}, DType::kI32);
  int32_t* r = row.i32();
  r[0] = static_cast<int32_t>(start_us >> 30);
  r[1] = static_cast<int32_t>(start_us & ((int64_t{1} << 30) - 1));
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
  auto origin = [&](int rank) { return (int64_t{x[rank * width]} << 30) + x[rank * width + 1]; };
  int64_t base = origin(0);
  for (int s = 0; s < p; ++s) base = std::min(base, origin(s * opts.dp));
  timeline.spans.assign(p, {});
  for (int s = 0; s < p; ++s) {
    const int rank = s * opts.dp;  // replica 0 of each stage
    const double shift = static_cast<double>(origin(rank) - base);
    for (size_t i = 0; i < lowered.actions[s].size(); ++i) {
      const int32_t* e = x + rank * width + 2 + 5 * i;
      timeline.spans[s].push_back({Action{static_cast<ActionKind>(e[0]), e[1], e[2]}, e[3] + shift, e[4] + shift});
    }
  }
}

}  // namespace sf::pipeline
