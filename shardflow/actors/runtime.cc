#include <shardflow/actors/runtime.h>

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <climits>
#include <map>

#include <shardflow/actors/collective_actor.h>
#include <shardflow/actors/node_meters.h>
#include <shardflow/actors/op_actor.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/blas.h>
#include <shardflow/ops/collective_attrs.h>
#include <shardflow/ops/op_def.h>
#include <shardflow/ops/plan.h>

namespace sf {

namespace {
caf::actor_system_config make_config(int threads) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", static_cast<size_t>(threads));
  cfg.set("logger.verbosity", caf::atom("quiet"));
  // An idle worker keeps polling (and stealing) for about a millisecond before it backs off:
  // CAF's default backs off to 50 us sleeps at once, and a sleeping worker only notices work
  // queued on another worker when it next steals, which left a step's second branch idle
  // for ~100 us. A step keeps both workers busy, so the polling costs nothing useful.
  if (threads > 1) {
    cfg.set("work-stealing.aggressive-poll-attempts", size_t{20000});
    cfg.set("work-stealing.aggressive-steal-interval", size_t{1});
    cfg.set("work-stealing.moderate-sleep-duration", caf::timespan{std::chrono::microseconds(10)});
  }
  return cfg;
}
// The needed consumers of a node, each once (a consumer reading it twice is listed twice).
std::vector<int> unique_needed(std::vector<int> ids, const std::vector<char>& needed) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::erase_if(ids, [&](int c) { return !needed[c]; });
  return ids;
}
}  // namespace

struct Runtime::Impl {
  Impl(const Graph& graph, std::vector<int> f, RuntimeOptions o)
      : g(graph), fetches(std::move(f)), opts(o), cfg(make_config(o.threads)), sys(cfg) {}

  const Graph& g;
  std::vector<int> fetches;
  RuntimeOptions opts;
  caf::actor_system_config cfg;
  caf::actor_system sys;
  std::vector<caf::actor> actors;  // by node id; empty handle for sources and unneeded nodes
  std::vector<caf::actor> collective_actors;  // one per group the needed collective nodes use
  StepState shared;
  // Per fed node id: the (actor, slot) pairs its value goes to each step.
  std::vector<std::vector<std::pair<caf::actor, int32_t>>> fed_to;
  std::vector<int> params;               // Parameter nodes some actor reads
  std::vector<caf::actor> tick_actors;  // ops with no dynamic input get a tick each step
  std::vector<int> inputs;  // Input nodes some actor reads: each must be fed every step
  std::vector<char> fed;
  Feeds feeds;
  // Streaming: per phase, the actors its admission gates (and the gate's slot); the actors of no
  // phase, ticked for every step at a cycle's start; the actors per phase.
  std::vector<std::vector<std::pair<caf::actor, int32_t>>> gates;
  std::vector<caf::actor> cycle_ticks;
  std::vector<int> phase_count;
  int64_t cycle_base = -1;
  int actor_count = 0;
  int64_t step = 0;
  bool poisoned = false;
  bool results_held = false;  // the caller still reads the last step's results

  void spawn_collective_actors(const std::vector<int>& order, std::vector<caf::actor>& actor_of,
                               std::vector<int32_t>& index_of);
  void validate(const Feeds& feeds);
  void check_feeds(const Feeds& feeds);
  void check_stream();
  void launch(const Feeds& feeds);
  void release_results();
  void rethrow_failure();
};

Runtime::Runtime(const Graph& g, std::vector<int> fetches, RuntimeOptions opts) {
  SF_ENFORCE(opts.threads >= 1, InvalidArgument, "runtime: threads must be >= 1, got {}", opts.threads);
  SF_ENFORCE(opts.registers >= 1, InvalidArgument, "runtime: registers must be >= 1, got {}", opts.registers);
  set_blas_threads(1);
  impl_ = std::make_unique<Impl>(g, std::move(fetches), opts);
  Impl& im = *impl_;
  const std::vector<int> order = needed_nodes(g, im.fetches);
  std::vector<char> needed(g.size(), 0);
  for (int id : order) needed[id] = 1;
  const auto consumers = g.consumers();

  im.shared.bound.resize(g.size());
  im.shared.results.resize(im.fetches.size());
  im.shared.result_regs.resize(im.fetches.size());
  std::vector<std::vector<int>> fetch_slots(g.size());  // per node id: the fetch indices it delivers
  for (size_t f = 0; f < im.fetches.size(); ++f) {
    const Node& n = g.node(im.fetches[f]);
    SF_ENFORCE(!n.def->is_source(), InvalidArgument, "runtime: cannot fetch source node {}", node_label(n));
    fetch_slots[n.id].push_back(static_cast<int>(f));
  }
  const StreamSpec* stream = opts.stream.get();
  if (stream) {
    im.check_stream();
    im.shared.stream = stream;
    im.gates.resize(stream->phases);
    im.phase_count.assign(stream->phases, 0);
    im.shared.phase_left = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(stream->phases * stream->cycle));
    im.shared.phase_first =
        std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(stream->phases * stream->cycle));
  }
  im.fed_to.resize(g.size());
  im.fed.resize(g.size());
  im.actors.resize(g.size());
  {
    std::vector<std::string> names, ops;
    for (const Node& n : g.nodes()) {
      names.push_back(n.name);
      ops.push_back(n.op);
    }
    im.shared.trace.reset(std::move(names), std::move(ops));
    im.shared.trace.set_enabled(opts.trace);
  }

  // Collective nodes: their group's actor and their index in its program order (checked
  // before any actor exists, so that a refusal leaves nothing running).
  std::vector<caf::actor> collective_of(g.size());
  std::vector<int32_t> collective_index(g.size(), -1);
  im.spawn_collective_actors(order, collective_of, collective_index);

  // Spawn consumers before producers (reverse id order) so every consumer handle exists.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& n = g.node(*it);
    if (n.def->is_source()) continue;
    OpActorSpec spec;
    spec.node = &n;
    spec.registers = opts.registers;
    spec.shared = &im.shared;
    spec.actors = &im.actors;
    spec.fetch_indices = fetch_slots[n.id];
    spec.collective = collective_of[n.id];
    spec.collective_index = collective_index[n.id];
    spec.meter = node_meter(n);
    for (int k = 0; k < static_cast<int>(n.inputs.size()); ++k) {
      const Node& in = g.node(n.inputs[k]);
      spec.queue_of_slot.push_back(in.op == "Parameter" ? -1 : spec.queues++);
    }
    const bool tick = spec.queues == 0;
    bool gated = false;  // streaming: waits for its phase's admission on its last queue
    if (stream) {
      spec.phase = stream->phase_of[n.id];
      if (stream->registers[n.id] > 0) spec.registers = stream->registers[n.id];
      gated = spec.phase >= 0 && std::none_of(n.inputs.begin(), n.inputs.end(), [&](int in) {
                return !g.node(in).def->is_source() && stream->phase_of[in] == spec.phase;
              });
    }
    if (tick || gated) ++spec.queues;
    for (int c : unique_needed(consumers[n.id], needed)) {
      const Node& cn = g.node(c);
      for (int k = 0; k < static_cast<int>(cn.inputs.size()); ++k)
        if (cn.inputs[k] == n.id) spec.consumers.push_back({im.actors[c], k});
    }
    const int phase = spec.phase;
    const auto gate_slot = static_cast<int32_t>(n.inputs.size());
    im.actors[n.id] = im.sys.spawn(op_actor, std::move(spec));
    ++im.actor_count;
    if (!stream) {
      if (tick) im.tick_actors.push_back(im.actors[n.id]);
    } else if (phase >= 0) {
      ++im.phase_count[phase];
      if (tick || gated) im.gates[phase].emplace_back(im.actors[n.id], gate_slot);
    } else if (tick) {
      im.cycle_ticks.push_back(im.actors[n.id]);
    }
  }
  for (int id : order) {
    const Node& n = g.node(id);
    if (!n.def->is_source()) continue;
    for (int c : unique_needed(consumers[id], needed)) {
      const Node& cn = g.node(c);
      for (int k = 0; k < static_cast<int>(cn.inputs.size()); ++k)
        if (cn.inputs[k] == id && n.op == "Input") im.fed_to[id].push_back({im.actors[c], k});
    }
    if (n.op == "Parameter") im.params.push_back(id);
    if (!im.fed_to[id].empty()) im.inputs.push_back(id);
  }
}

// The program order of a group is the order of node ids, which every rank's graph shares.
void Runtime::Impl::spawn_collective_actors(const std::vector<int>& order, std::vector<caf::actor>& actor_of,
                                            std::vector<int32_t>& index_of) {
  std::map<std::string, CollectiveActorSpec> specs;
  for (int id : order) {
    const Node& n = g.node(id);
    if (!is_collective(n)) continue;
    const GroupRef ref = group_of(n);
    const comm::Group group = opts.collectives.resolve(ref.name, node_label(n));
    SF_ENFORCE(group.size() == ref.size, InvalidArgument,
               "runtime: {} was built for group '{}' of size {}, but this rank's group '{}' has size {}",
               node_label(n), ref.name, ref.size, ref.name, group.size());
    CollectiveActorSpec& spec = specs[ref.name];
    spec.group = group;
    spec.timeout = opts.collectives.timeout;
    index_of[id] = spec.count++;
  }
  if (const StreamSpec* stream = opts.stream.get()) {
    for (auto& [name, spec] : specs) {
      auto it = stream->collective_order.find(name);
      SF_ENFORCE(it != stream->collective_order.end(), InvalidArgument,
                 "runtime: the stream gives no order for the collectives of group '{}'", name);
      spec.cycle = stream->cycle;
      for (const auto& [step, id] : it->second) {
        SF_ENFORCE(id >= 0 && id < g.size() && index_of[id] >= 0 && group_of(g.node(id)).name == name,
                   InvalidArgument, "runtime: the order of group '{}' names node {}, not one of its collectives", name,
                   id);
        spec.order.emplace_back(step, index_of[id]);
      }
      SF_ENFORCE(static_cast<int64_t>(spec.order.size()) == spec.count * stream->cycle, InvalidArgument,
                 "runtime: the order of group '{}' has {} entries for {} collectives over {} steps", name,
                 spec.order.size(), spec.count, stream->cycle);
      if (stream->on_collective)
        spec.on_run = [cb = stream->on_collective](const Node& n, int64_t step, int64_t t0, int64_t t1) {
          cb(n.id, step, t0, t1);
        };
    }
  }
  std::map<std::string, caf::actor> spawned;
  for (auto& [name, spec] : specs) {
    spawned[name] = sys.spawn<caf::detached>(collective_actor, std::move(spec));
    collective_actors.push_back(spawned[name]);
  }
  for (int id : order)
    if (index_of[id] >= 0) actor_of[id] = spawned[g.node(id).attrs.get_str("group")];
}

Runtime::~Runtime() {
  for (auto& a : impl_->actors)
    if (a) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  for (auto& a : impl_->collective_actors) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  // Wait here, not in the actor system's destructor: an actor may still be finishing the
  // firing that delivered the caller's last result, and it uses state (StepState, the actor
  // table it acknowledges through) that the Impl destroys before its actor system.
  impl_->sys.await_all_actors_done();
}

void Runtime::bind(int node_id, const Tensor& t) {
  const Node& n = impl_->g.node(node_id);
  SF_ENFORCE(n.op == "Parameter", InvalidArgument, "runtime: bind() takes Parameter nodes, {} is fed through run()",
             node_label(n));
  check_binding(n, t);
  impl_->shared.bound[node_id] = t;
}

void Runtime::Impl::validate(const Feeds& feeds) {
  std::fill(fed.begin(), fed.end(), 0);
  for (const auto& [id, t] : feeds) {
    const Node& n = g.node(id);
    SF_ENFORCE(n.op == "Input", InvalidArgument, "runtime: {} is not an Input node", node_label(n));
    check_binding(n, t);
    fed[id] = 1;
  }
  for (int id : inputs) SF_ENFORCE(fed[id], InvalidArgument, "runtime: no value fed for {}", node_label(g.node(id)));
  for (int id : params)
    SF_ENFORCE(shared.bound[id].defined(), InvalidArgument, "runtime: {} is not bound (bind() it before run())",
               node_label(g.node(id)));
}

void Runtime::Impl::release_results() {
  if (!results_held) return;
  for (size_t f = 0; f < fetches.size(); ++f) caf::anon_send(actors[fetches[f]], AckMsg{shared.result_regs[f]});
  results_held = false;
}

void Runtime::Impl::launch(const Feeds& feeds) {
  shared.remaining.store(static_cast<int>(fetches.size()), std::memory_order_release);
  results_held = true;  // from now until release_results(), the fetched registers are the caller's
  for (const auto& [id, t] : feeds)
    for (const auto& [actor, slot] : fed_to[id]) caf::anon_send(actor, DataMsg{slot, -1, 0, step, t});
  for (auto& a : tick_actors) caf::anon_send(a, DataMsg{0, -1, 0, step, Tensor()});
  ++step;
}

void Runtime::Impl::rethrow_failure() {
  if (!shared.failed.load(std::memory_order_acquire)) return;
  poisoned = true;
  std::lock_guard<std::mutex> lk(shared.error_mu);
  if (!shared.error) SF_THROW(Error, "runtime: a step failed without an error");
  std::rethrow_exception(shared.error);  // as thrown: a PeerLost stays a PeerLost
}

void Runtime::Impl::check_stream() {
  const StreamSpec& s = *opts.stream;
  SF_ENFORCE(s.cycle >= 1 && s.phases >= 0, InvalidArgument, "runtime: a stream needs cycle >= 1 and phases >= 0");
  SF_ENFORCE(static_cast<int>(s.phase_of.size()) == g.size() && static_cast<int>(s.registers.size()) == g.size(),
             InvalidArgument, "runtime: the stream's phase_of and registers must have one entry per node ({})",
             g.size());
  for (int p : s.phase_of)
    SF_ENFORCE(p >= -1 && p < s.phases, InvalidArgument, "runtime: phase {} outside [-1, {})", p, s.phases);
  SF_ENFORCE(s.on_fetch, InvalidArgument, "runtime: a stream needs on_fetch");
}

void Runtime::Impl::check_feeds(const Feeds& feeds) {
  for (const auto& [id, t] : feeds) {
    const Node& n = g.node(id);
    SF_ENFORCE(n.op == "Input", InvalidArgument, "runtime: {} is not an Input node", node_label(n));
    check_binding(n, t);
  }
}

void Runtime::begin_cycle() {
  Impl& im = *impl_;
  SF_ENFORCE(im.shared.stream, InvalidArgument, "runtime: begin_cycle() needs a streaming runtime");
  SF_ENFORCE(!im.poisoned, Error, "runtime: unusable after an op failed in an earlier step");
  const int64_t cycle = im.shared.stream->cycle;
  for (int p = 0; p < static_cast<int>(im.phase_count.size()); ++p)
    for (int64_t s = 0; s < cycle; ++s) {
      im.shared.left(p, s).store(im.phase_count[p], std::memory_order_release);
      im.shared.phase_first[p * cycle + s].store(INT64_MAX, std::memory_order_relaxed);
    }
  im.cycle_base = im.step;
  for (int64_t s = 0; s < cycle; ++s)
    for (auto& a : im.cycle_ticks) caf::anon_send(a, DataMsg{0, -1, 0, im.step + s, Tensor()});
  im.step += cycle;
}

void Runtime::admit(int phase, int64_t step_in_cycle, const Feeds& feeds) {
  Impl& im = *impl_;
  SF_ENFORCE(im.cycle_base >= 0, InvalidArgument, "runtime: admit() before begin_cycle()");
  SF_ENFORCE(phase >= 0 && phase < static_cast<int>(im.gates.size()) && step_in_cycle >= 0 &&
                 step_in_cycle < im.shared.stream->cycle,
             InvalidArgument, "runtime: no phase {} of step {} in this stream", phase, step_in_cycle);
  im.check_feeds(feeds);
  const int64_t step = im.cycle_base + step_in_cycle;
  for (const auto& [id, t] : feeds)
    for (const auto& [actor, slot] : im.fed_to[id]) caf::anon_send(actor, DataMsg{slot, -1, 0, step, t});
  for (const auto& [actor, slot] : im.gates[phase]) caf::anon_send(actor, DataMsg{slot, -1, 0, step, Tensor()});
}

void Runtime::wait(int phase, int64_t step_in_cycle) {
  Impl& im = *impl_;
  StepState& st = im.shared;
  {
    std::unique_lock<std::mutex> lk(st.phase_mu);
    st.phase_cv.wait(lk, [&] {
      return st.failed.load(std::memory_order_acquire) ||
             st.left(phase, step_in_cycle).load(std::memory_order_acquire) == 0;
    });
  }
  im.rethrow_failure();
}

int64_t Runtime::phase_started_ns(int phase, int64_t step_in_cycle) const {
  const StepState& st = impl_->shared;
  const int64_t t = st.phase_first[phase * st.stream->cycle + step_in_cycle].load(std::memory_order_relaxed);
  return t == INT64_MAX ? -1 : t;
}

const std::vector<Tensor>& Runtime::run(const Feeds& feeds) {
  Impl& im = *impl_;
  SF_ENFORCE(!im.shared.stream, InvalidArgument, "runtime: a streaming runtime runs by admit(), not run()");
  SF_ENFORCE(!im.poisoned, Error, "runtime: unusable after an op failed in an earlier step");
  im.validate(feeds);  // everything is checked before any actor is touched
  im.release_results();
  im.shared.busy.store(1, std::memory_order_release);
  im.launch(feeds);
  im.shared.wait_caller();
  im.rethrow_failure();
  return im.shared.results;
}

void Runtime::run_steps(const NextFn& next, const DoneFn& done) {
  Impl& im = *impl_;
  SF_ENFORCE(!im.shared.stream, InvalidArgument, "runtime: a streaming runtime runs by admit(), not run_steps()");
  SF_ENFORCE(!im.poisoned, Error, "runtime: unusable after an op failed in an earlier step");
  im.release_results();
  im.shared.busy.store(1, std::memory_order_release);
  // The driver runs next() and done() on a worker thread between steps: no thread hand-off
  // between consecutive steps, which on these machines costs tens of microseconds each.
  // The runtime is passed as a spawn argument, not captured: CAF 0.17 keeps an actor's empty
  // argument list as a null shared_ptr and binds a reference through it (UBSan reports it).
  auto body = [&next, &done](caf::event_based_actor* self, Impl* runtime) -> caf::behavior {
    Impl& im = *runtime;
    return {[&im, &next, &done, self, first = true](StepDoneMsg) mutable {
      try {
        if (!first) done(im.shared.results);
        first = false;
        im.release_results();
        im.feeds.clear();
        if (!next(im.feeds)) {
          self->quit();
          im.shared.release_caller();
          return;
        }
        im.validate(im.feeds);
        im.launch(im.feeds);
      } catch (...) {
        self->quit();
        im.shared.fail(std::current_exception());  // next(), done() or validate(): their own errors
      }
    }};
  };
  auto driver = im.sys.spawn(body, &im);
  im.shared.on_step_done = [driver] { caf::anon_send(driver, StepDoneMsg{}); };
  caf::anon_send(driver, StepDoneMsg{});
  im.shared.wait_caller();
  im.shared.on_step_done = nullptr;
  caf::anon_send_exit(driver, caf::exit_reason::user_shutdown);
  im.rethrow_failure();
}

int Runtime::threads() const { return impl_->opts.threads; }
int64_t Runtime::steps() const { return impl_->step; }
int Runtime::actor_count() const { return impl_->actor_count; }

void Runtime::write_trace(const std::string& path) const {
  SF_ENFORCE(impl_->opts.trace, InvalidArgument, "runtime: write_trace needs RuntimeOptions::trace");
  impl_->shared.trace.write(path);
}

}  // namespace sf
