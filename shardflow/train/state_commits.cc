#include <shardflow/train/state_commits.h>

#include <shardflow/train/state_assembly.h>

namespace sf {

StateCommits::StateCommits(int64_t global_step, TrainingState start) {
  states_.emplace_back(global_step, std::move(start));
}

void StateCommits::on_step_end(const RunContext& ctx) { keep(ctx); }

void StateCommits::keep(const RunContext& ctx) {
  TrainingState state = capture_training_state(ctx);
  // A member may hold blocks (DP x TP) or some stages (DP x PP); where they lie is the same after
  // every step of a world.
  if (!blocks_) blocks_ = state_blocks(state, ctx.network->get_parameters());
  note_state_blocks(state, *blocks_);
  std::lock_guard<std::mutex> lock(mu_);
  if (!states_.empty() && states_.back().first == ctx.global_step) states_.pop_back();
  states_.emplace_back(ctx.global_step, std::move(state));
  while (states_.size() > 2) states_.pop_front();
}

int64_t StateCommits::newest_step() const {
  std::lock_guard<std::mutex> lock(mu_);
  return states_.back().first;
}

std::optional<TrainingState> StateCommits::at(int64_t global_step) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [step, state] : states_)
    if (step == global_step) return state;
  return std::nullopt;
}

}  // namespace sf
