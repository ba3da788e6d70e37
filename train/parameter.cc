#include "train/parameter.h"

#include <atomic>

#include "train/initializer.h"

namespace sf {

namespace {
std::atomic<uint64_t> g_seed{0};
}

void set_seed(uint64_t seed) { g_seed = seed; }
uint64_t get_seed() { return g_seed; }

Parameter::Parameter(Shape shape, std::string init) : data_(std::make_shared<Data>()) {
  data_->value = Tensor(std::move(shape));
  data_->init = std::move(init);
  check_initializer(data_->init);
}

void Parameter::finalize(const std::string& full_name, uint64_t seed) {
  data_->name = full_name;
  if (!data_->initialized) {
    initialize(data_->value, data_->init, seed, full_name);
    data_->initialized = true;
  }
}

}  // namespace sf
