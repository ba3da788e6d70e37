#include <shardflow/data/epoch_counter.h>

namespace sf::dataset {

int64_t EpochCounter::get(int reader) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = readers_.find(reader);
  return it == readers_.end() ? all_ : it->second;
}

void EpochCounter::set_all(int64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  all_ = epoch;
  readers_.clear();
}

void EpochCounter::set(int reader, int64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  readers_[reader] = epoch;
}

}  // namespace sf::dataset
