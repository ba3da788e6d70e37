#include <shardflow/train/parameter_record.h>

#include <algorithm>

namespace sf::nn {
namespace {
thread_local ParameterRecord* active = nullptr;
}

ParameterRecord::ParameterRecord() : outer_(active) { active = this; }

ParameterRecord::~ParameterRecord() { active = outer_; }

void parameter_read(const Parameter& p) {
  if (!active) return;
  ParameterList& list = active->params_;
  if (std::find(list.begin(), list.end(), p) == list.end()) list.push_back(p);
}

}  // namespace sf::nn
