#include <shardflow/train/resume_point.h>

namespace sf {

ResumePoint resume_point_of(const RunContext& ctx) {
  // Model::train keeps step_in_epoch at the steps done of the epoch that ctx.dataset_epoch
  // walks, at every hook; a finished epoch continues at the next one's start.
  if (ctx.steps_per_epoch > 0 && ctx.step_in_epoch >= ctx.steps_per_epoch) return {ctx.dataset_epoch + 1, 0};
  return {ctx.dataset_epoch, ctx.step_in_epoch};
}

}  // namespace sf
