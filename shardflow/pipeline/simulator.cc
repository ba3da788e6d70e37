// Validation by counting every (kind, stage, chunk, micro-batch) against what the schedule
// needs; simulation as list scheduling: sweep the stages, start each stage's next action once
// its inputs have finish times, until nothing moves.
#include <shardflow/pipeline/simulator.h>

#include <algorithm>
#include <optional>

namespace sf::pipeline {
namespace {

// Dense index over (kind, stage, chunk, micro-batch).
struct Keys {
  int p, v, m;
  size_t size() const { return static_cast<size_t>(kActionKinds) * p * v * m; }
  size_t of(ActionKind kind, int stage, const Action& a) const {
    return ((static_cast<size_t>(kind) * p + stage) * v + a.chunk) * m + a.micro_batch;
  }
};

bool has_kind(const Schedule& s, auto pred) {
  for (const auto& list : s.actions) {
    if (std::any_of(list.begin(), list.end(), [&](const Action& a) { return pred(a.kind); })) return true;
  }
  return false;
}
bool has_transfers(const Schedule& s) {
  return has_kind(s, [](ActionKind k) { return !is_compute(k); });
}

// An action another action waits for: `kind` on `stage`, same micro-batch, chunk `chunk`.
struct Input {
  ActionKind kind;
  int stage;
  int chunk;
};

// What `a` on `stage` waits for. Virtual stage k = chunk·p + stage; k-1 and k+1 are its
// neighbours in the model.
std::vector<Input> inputs_of(const Schedule& s, int stage, const Action& a, bool transfers) {
  const int p = s.stages;
  const int k = a.chunk * p + stage;
  const int last = p * s.chunks - 1;
  const Input prev{ActionKind::kForward, (k - 1 + p) % p, (k - 1) / p};
  const Input next{ActionKind::kBackward, (k + 1) % p, (k + 1) / p};
  const auto at = [](ActionKind kind, Input where) { return Input{kind, where.stage, where.chunk}; };
  const Input here{a.kind, stage, a.chunk};
  std::vector<Input> in;
  switch (a.kind) {
    case ActionKind::kForward:
      if (k > 0) in.push_back(prev);
      if (k > 0 && transfers) in.push_back(at(ActionKind::kRecvActivation, here));
      break;
    case ActionKind::kBackward:
      in.push_back(at(ActionKind::kForward, here));
      if (k < last) in.push_back(next);
      if (k < last && transfers) in.push_back(at(ActionKind::kRecvGradient, here));
      break;
    case ActionKind::kWeight:
      in.push_back(at(ActionKind::kBackward, here));
      break;
    case ActionKind::kSendActivation:
      in.push_back(at(ActionKind::kForward, here));
      break;
    case ActionKind::kRecvActivation:
      in.push_back(at(ActionKind::kSendActivation, prev));
      break;
    case ActionKind::kSendGradient:
      in.push_back(at(ActionKind::kBackward, here));
      break;
    case ActionKind::kRecvGradient:
      in.push_back(at(ActionKind::kSendGradient, next));
      break;
  }
  return in;
}

// How many of `kind` virtual stage k needs per micro-batch.
int expected_count(ActionKind kind, int k, int last, bool split, bool transfers) {
  switch (kind) {
    case ActionKind::kForward:
    case ActionKind::kBackward:
      return 1;
    case ActionKind::kWeight:
      return split ? 1 : 0;
    case ActionKind::kSendActivation:
    case ActionKind::kRecvGradient:
      return transfers && k < last ? 1 : 0;
    case ActionKind::kRecvActivation:
    case ActionKind::kSendGradient:
      return transfers && k > 0 ? 1 : 0;
  }
  return 0;
}

double cost_of(ActionKind kind, const ActionCosts& c) {
  switch (kind) {
    case ActionKind::kForward:
      return c.forward;
    case ActionKind::kBackward:
      return c.backward;
    case ActionKind::kWeight:
      return c.weight;
    default:
      return c.transfer;
  }
}

}  // namespace

void validate_schedule(const Schedule& s) {
  const std::string name = s.name.empty() ? "(parsed)" : s.name;
  SF_ENFORCE(s.stages >= 1 && s.micro_batches >= 1 && s.chunks >= 1 && static_cast<int>(s.actions.size()) == s.stages,
             InvalidArgument, "pipeline schedule '{}': {} stage lists for {} stages, {} micro-batches, {} chunks", name,
             s.actions.size(), s.stages, s.micro_batches, s.chunks);
  const Keys keys{s.stages, s.chunks, s.micro_batches};
  std::vector<int> count(keys.size(), 0);
  for (int stage = 0; stage < s.stages; ++stage) {
    for (const Action& a : s.actions[stage]) {
      SF_ENFORCE(a.micro_batch >= 0 && a.micro_batch < s.micro_batches && a.chunk >= 0 && a.chunk < s.chunks,
                 InvalidArgument, "pipeline schedule '{}': stage {} has '{}', outside {} micro-batches and {} chunks",
                 name, stage, to_string(a), s.micro_batches, s.chunks);
      ++count[keys.of(a.kind, stage, a)];
    }
  }
  const bool split = splits_backward(s);
  const bool transfers = has_transfers(s);
  const int last = s.stages * s.chunks - 1;
  for (int kind = 0; kind < kActionKinds; ++kind) {
    for (int stage = 0; stage < s.stages; ++stage) {
      for (int chunk = 0; chunk < s.chunks; ++chunk) {
        for (int mb = 0; mb < s.micro_batches; ++mb) {
          const Action a{static_cast<ActionKind>(kind), mb, chunk};
          const int want = expected_count(a.kind, chunk * s.stages + stage, last, split, transfers);
          const int have = count[keys.of(a.kind, stage, a)];
          SF_ENFORCE(have == want, InvalidArgument, "pipeline schedule '{}': stage {} has '{}' {} time(s), expected {}",
                     name, stage, to_string(a), have, want);
        }
      }
    }
  }
}

SimulationResult simulate_schedule(const Schedule& s, const ActionCosts& costs) {
  validate_schedule(s);
  const Keys keys{s.stages, s.chunks, s.micro_batches};
  const bool split = splits_backward(s);
  const bool transfers = has_transfers(s);
  std::vector<std::optional<double>> finished(keys.size());
  std::vector<size_t> next(s.stages, 0);
  std::vector<double> free_at(s.stages, 0);
  SimulationResult result;
  result.stages.resize(s.stages);

  for (bool moved = true; moved;) {
    moved = false;
    for (int stage = 0; stage < s.stages; ++stage) {
      const auto& list = s.actions[stage];
      StageTimeline& line = result.stages[stage];
      while (next[stage] < list.size()) {
        const Action& a = list[next[stage]];
        double start = free_at[stage];
        bool ready = true;
        for (const Input& in : inputs_of(s, stage, a, transfers)) {
          const auto& done = finished[keys.of(in.kind, in.stage, Action{in.kind, a.micro_batch, in.chunk})];
          if (!done) {
            ready = false;
            break;
          }
          start = std::max(start, *done);
        }
        if (!ready) break;
        const double cost = cost_of(a.kind, costs);
        line.start.push_back(start);
        line.finish.push_back(start + cost);
        line.busy += cost;
        free_at[stage] = start + cost;
        finished[keys.of(a.kind, stage, a)] = start + cost;
        ++next[stage];
        moved = true;
      }
    }
  }

  std::string stuck;
  int first_stage = -1;
  for (int stage = 0; stage < s.stages; ++stage) {
    if (next[stage] == s.actions[stage].size()) continue;
    const Action& a = s.actions[stage][next[stage]];
    std::string waits;
    for (const Input& in : inputs_of(s, stage, a, transfers)) {
      const Action need{in.kind, a.micro_batch, in.chunk};
      if (!finished[keys.of(in.kind, in.stage, need)]) {
        waits += fmt::format("{}'{}' on stage {}", waits.empty() ? "" : ", ", to_string(need), in.stage);
      }
    }
    stuck += fmt::format("{}stage {} can never run action {} '{}' (it waits for {})", stuck.empty() ? "" : "; ", stage,
                         next[stage], to_string(a), waits);
    if (first_stage < 0) first_stage = stage;
  }
  if (first_stage >= 0) {
    throw ScheduleDeadlock(
        first_stage, s.actions[first_stage][next[first_stage]],
        fmt::format("pipeline schedule '{}' deadlocks: {}", s.name.empty() ? "(parsed)" : s.name, stuck), SF_WHERE);
  }

  double total_busy = 0;
  for (int stage = 0; stage < s.stages; ++stage) {
    result.makespan = std::max(result.makespan, free_at[stage]);
    total_busy += result.stages[stage].busy;
  }
  for (int stage = 0; stage < s.stages; ++stage) {
    StageTimeline& line = result.stages[stage];
    line.bubble_fraction = result.makespan > 0 ? 1 - line.busy / result.makespan : 0;
    // A stage runs its list in order, so walking it walks time.
    const ActionKind release = split ? ActionKind::kWeight : ActionKind::kBackward;
    int stashed = 0;
    for (const Action& a : s.actions[stage]) {
      if (a.kind == ActionKind::kForward) line.peak_stashed = std::max(line.peak_stashed, ++stashed);
      if (a.kind == release) --stashed;
    }
  }
  result.bubble_fraction = result.makespan > 0 ? 1 - total_busy / (s.stages * result.makespan) : 0;
  return result;
}

}  // namespace sf::pipeline
