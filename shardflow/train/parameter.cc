#include <shardflow/train/parameter.h>

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/train/initializer.h>

namespace sf {

namespace {
std::atomic<uint64_t> g_seed{0};
}

void set_seed(uint64_t seed) { g_seed = seed; }
uint64_t get_seed() { return g_seed; }

Parameter::Parameter(Shape shape, std::string init, bool requires_grad) : data_(std::make_shared<Data>()) {
  data_->shape = shape;
  data_->requires_grad = requires_grad;
  data_->value = Tensor(std::move(shape));
  data_->init = std::move(init);
  check_initializer(data_->init);
}

void Parameter::add_pipeline_stage(int stage) {
  SF_ENFORCE(stage >= 0, InvalidArgument, "Parameter '{}': add_pipeline_stage({}): a stage is >= 0", data_->name, stage);
  if (std::find(data_->pipeline_stages.begin(), data_->pipeline_stages.end(), stage) == data_->pipeline_stages.end())
    data_->pipeline_stages.push_back(stage);
}

void Parameter::finalize(const std::string& full_name, uint64_t seed) {
  data_->name = full_name;
  if (!data_->initialized) {
    initialize(data_->value, data_->init, seed, full_name);
    data_->initialized = true;
    data_->seed = seed;
  }
}

void Parameter::shard(const std::vector<int64_t>& offset, const Shape& block) {
  if (sharded()) {
    SF_ENFORCE(data_->offset == offset && data_->value.shape() == block, InvalidArgument,
               "parameter '{}' is already sharded as the block {} at {}; it cannot also be {} at {}",
               brief_text(name(), 80), brief_shape(data_->value.shape()), brief_ints(data_->offset), brief_shape(block),
               brief_ints(offset));
    return;
  }
  SF_ENFORCE(data_->initialized, InvalidArgument, "parameter of shape {}: shard() before it is named and initialised",
             brief_shape(data_->shape));
  Tensor t(block);
  initialize(t, data_->init, data_->seed, data_->name, ShardRegion{data_->shape, offset});
  data_->value = std::move(t);
  data_->offset = offset;
  data_->sharded = true;
}

}  // namespace sf
