// The thread's node-meter chooser (actors/node_meters.h).
#include <shardflow/actors/node_meters.h>

namespace sf {

namespace {

// The current scope's chooser; a plain pointer, so that a thread without one pays a load.
thread_local const NodeMeterFn* t_choose = nullptr;

}  // namespace

NodeMeterScope::NodeMeterScope(NodeMeterFn choose) : choose_(std::move(choose)), previous_(t_choose) {
  t_choose = choose_ ? &choose_ : nullptr;
}

NodeMeterScope::~NodeMeterScope() { t_choose = previous_; }

std::shared_ptr<MemoryMeter> node_meter(const Node& n) { return t_choose ? (*t_choose)(n) : nullptr; }

}  // namespace sf
