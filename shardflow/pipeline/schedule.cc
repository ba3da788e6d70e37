// The schedule generators and the schedule text form. Each generator writes a stage's list in
// the order the papers draw it; the golden files in tests/pipeline/golden pin the output.
#include <shardflow/pipeline/schedule.h>

#include <algorithm>
#include <sstream>

#include <shardflow/core/error.h>

namespace sf::pipeline {
namespace {

Action forward(int mb, int chunk = 0) { return {ActionKind::kForward, mb, chunk}; }
Action backward(int mb, int chunk = 0) { return {ActionKind::kBackward, mb, chunk}; }
Action weight(int mb) { return {ActionKind::kWeight, mb, 0}; }

std::vector<Action> gpipe(int m) {
  std::vector<Action> list;
  for (int mb = 0; mb < m; ++mb) list.push_back(forward(mb));
  for (int mb = 0; mb < m; ++mb) list.push_back(backward(mb));
  return list;
}

// Stage s runs p-s-1 forwards ahead so the last stage can start its first backward as soon as
// it has a forward; then one forward and one backward in turn; then the backwards left over.
std::vector<Action> one_f_one_b(int p, int m, int s) {
  const int warmup = std::min(p - s - 1, m);
  std::vector<Action> list;
  for (int mb = 0; mb < warmup; ++mb) list.push_back(forward(mb));
  for (int k = 0; k < m - warmup; ++k) {
    list.push_back(forward(warmup + k));
    list.push_back(backward(k));
  }
  for (int k = m - warmup; k < m; ++k) list.push_back(backward(k));
  return list;
}

// Megatron-LM's forward_backward_pipelining_with_interleaving: the k-th forward on a rank takes
// micro-batches in groups of p, chunk 0 for a group, then chunk 1 for the same group, and so
// on; the k-th backward walks the chunks in reverse. Warm-up is 2(p-s-1) + (v-1)p forwards, or
// everything when m == p.
std::vector<Action> interleaved(int p, int m, int v, int s) {
  const int total = m * v;
  const auto chunk_of = [&](int k, bool is_forward) {
    const int c = (k % (p * v)) / p;
    return is_forward ? c : v - 1 - c;
  };
  const auto mb_of = [&](int k) { return (k / (p * v)) * p + k % p; };
  const int warmup = m == p ? total : std::min(2 * (p - s - 1) + (v - 1) * p, total);
  std::vector<Action> list;
  for (int k = 0; k < warmup; ++k) list.push_back(forward(mb_of(k), chunk_of(k, true)));
  for (int k = 0; k < total - warmup; ++k) {
    list.push_back(forward(mb_of(warmup + k), chunk_of(warmup + k, true)));
    list.push_back(backward(mb_of(k), chunk_of(k, false)));
  }
  for (int k = total - warmup; k < total; ++k) list.push_back(backward(mb_of(k), chunk_of(k, false)));
  return list;
}

// ZB-H1 (the paper's Figure 3, top): 1F1B's order of F and B, where B now computes only the
// input gradient; each W follows its B except that stage s holds its first s weight passes
// back and runs them at the end, where 1F1B would leave stage s idle waiting on gradients.
// The in-flight micro-batches (F done, B not) stay those of 1F1B.
std::vector<Action> zero_bubble_h1(int p, int m, int s) {
  std::vector<Action> list;
  int backwards = 0;
  int weights = 0;
  for (const Action& a : one_f_one_b(p, m, s)) {
    list.push_back(a);
    if (a.kind != ActionKind::kBackward) continue;
    if (++backwards > s) list.push_back(weight(weights++));
  }
  while (weights < m) list.push_back(weight(weights++));
  return list;
}

}  // namespace

bool splits_backward(const Schedule& schedule) {
  return std::any_of(schedule.actions.begin(), schedule.actions.end(), [](const std::vector<Action>& list) {
    return std::any_of(list.begin(), list.end(), [](const Action& a) { return a.kind == ActionKind::kWeight; });
  });
}

ScheduleKind schedule_kind(std::string_view name) {
  for (ScheduleKind k : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB, ScheduleKind::kInterleaved1F1B,
                         ScheduleKind::kZeroBubbleH1})
    if (schedule_name(k) == name) return k;
  throw InvalidArgument(fmt::format("pipeline: unknown schedule '{}' (gpipe, 1f1b, interleaved_1f1b, zb_h1)", name));
}

std::string_view schedule_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kGPipe:
      return "gpipe";
    case ScheduleKind::kOneFOneB:
      return "1f1b";
    case ScheduleKind::kInterleaved1F1B:
      return "interleaved_1f1b";
    case ScheduleKind::kZeroBubbleH1:
      return "zb_h1";
  }
  return "?";
}

Schedule make_schedule(ScheduleKind kind, int stages, int micro_batches, int chunks) {
  const std::string_view name = schedule_name(kind);
  SF_ENFORCE(stages >= 1 && micro_batches >= 1 && chunks >= 1, InvalidArgument,
             "pipeline schedule '{}': stages ({}), micro-batches ({}) and chunks ({}) must each be at least 1", name,
             stages, micro_batches, chunks);
  if (kind == ScheduleKind::kInterleaved1F1B) {
    SF_ENFORCE(chunks >= 2, InvalidArgument,
               "pipeline schedule '{}': needs at least 2 model chunks per stage, got {} (use '1f1b' for 1)", name,
               chunks);
    // One stage has no neighbour to hand a chunk to: its chunks are one model (the runtime
    // refuses it too).
    SF_ENFORCE(stages >= 2, InvalidArgument,
               "pipeline schedule '{}': needs at least 2 stages, got 1 with {} chunks (use '1f1b' on one stage)", name,
               chunks);
    SF_ENFORCE(micro_batches % stages == 0, InvalidArgument,
               "pipeline schedule '{}': micro-batches ({}) must be a multiple of the stages ({})", name, micro_batches,
               stages);
  } else {
    SF_ENFORCE(chunks == 1, InvalidArgument,
               "pipeline schedule '{}': has one model chunk per stage, got {} (use 'interleaved_1f1b')", name, chunks);
  }
  Schedule schedule{std::string(name), stages, micro_batches, chunks, {}};
  for (int s = 0; s < stages; ++s) {
    switch (kind) {
      case ScheduleKind::kGPipe:
        schedule.actions.push_back(gpipe(micro_batches));
        break;
      case ScheduleKind::kOneFOneB:
        schedule.actions.push_back(one_f_one_b(stages, micro_batches, s));
        break;
      case ScheduleKind::kInterleaved1F1B:
        schedule.actions.push_back(interleaved(stages, micro_batches, chunks, s));
        break;
      case ScheduleKind::kZeroBubbleH1:
        schedule.actions.push_back(zero_bubble_h1(stages, micro_batches, s));
        break;
    }
  }
  return schedule;
}

std::string to_text(const Schedule& schedule) {
  std::string text;
  for (const auto& list : schedule.actions) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (i) text += ' ';
      text += to_string(list[i]);
    }
    text += "\n";
  }
  return text;
}

Schedule parse_schedule(std::string_view text, int micro_batches, int chunks) {
  Schedule schedule{"", 0, micro_batches, chunks, {}};
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<Action> list;
    std::string word;
    while (words >> word) {
      try {
        list.push_back(parse_action(word));
      } catch (const InvalidArgument& e) {
        SF_THROW(InvalidArgument, "pipeline schedule, stage {}: {}", schedule.actions.size(), e.what());
      }
    }
    schedule.actions.push_back(std::move(list));
  }
  schedule.stages = static_cast<int>(schedule.actions.size());
  return schedule;
}

}  // namespace sf::pipeline
