#include <shardflow/train/callback.h>

#include <fmt/format.h>

#include <filesystem>

#include <shardflow/core/error.h>
#include <shardflow/train/checkpoint.h>
#include <shardflow/train/log_sink.h>

namespace sf {

std::string format_loss(float loss) {
  std::string s = fmt::format("{}", static_cast<double>(loss));
  // Python prints a whole-number float as "1.0", fmt as "1".
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

namespace {
// A whole line to `out`, or to the log sink when there is no stream.
void emit(std::ostream* out, std::string_view line) {
  if (out) write_line(*out, line);
  else log_line(line);
}
}  // namespace

LossMonitor::LossMonitor(int64_t per_print) : per_print_(per_print), out_(nullptr) {
  SF_ENFORCE(per_print >= 1, InvalidArgument, "LossMonitor: per_print must be >= 1, got {}", per_print);
}

LossMonitor::LossMonitor(int64_t per_print, std::ostream& out) : LossMonitor(per_print) { out_ = &out; }

void LossMonitor::on_step_end(const RunContext& ctx) {
  if (ctx.step_in_epoch % per_print_ == 0)
    emit(out_, fmt::format("epoch: {} step: {}, loss is {}", ctx.epoch, ctx.step_in_epoch, format_loss(ctx.loss)));
}

void TimeMonitor::on_epoch_end(const RunContext& ctx) {
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  emit(out_, fmt::format("Train epoch time: {:.3f} ms, per step time: {:.3f} ms", ms,
                         ms / static_cast<double>(std::max<int64_t>(ctx.steps_per_epoch, 1))));
}

ModelCheckpoint::ModelCheckpoint(std::string prefix, std::string directory, int64_t save_steps)
    : prefix_(std::move(prefix)), directory_(std::move(directory)), save_steps_(save_steps) {
  SF_ENFORCE(save_steps >= 0, InvalidArgument, "ModelCheckpoint: save_steps must be >= 0, got {}", save_steps);
}

void ModelCheckpoint::on_step_end(const RunContext& ctx) {
  if (save_steps_ > 0 && ctx.global_step % save_steps_ == 0) save(ctx);
}

void ModelCheckpoint::on_epoch_end(const RunContext& ctx) {
  if (save_steps_ == 0) save(ctx);
}

void ModelCheckpoint::save(const RunContext& ctx) {
  SF_ENFORCE(ctx.optimizer != nullptr, InvalidArgument, "ModelCheckpoint: no optimizer in the run context");
  std::filesystem::create_directories(directory_);
  std::string path = fmt::format("{}/{}-{}_{}.ckpt", directory_, prefix_, ctx.epoch, ctx.step_in_epoch);
  save_checkpoint(checkpoint_entries(*ctx.optimizer), path);
  saved_.push_back(path);
}

}  // namespace sf
