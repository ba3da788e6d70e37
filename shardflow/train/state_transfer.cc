#include <shardflow/train/state_transfer.h>

#include <string>

#include <nlohmann/json.hpp>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/text_tensor.h>
#include <shardflow/core/error.h>

namespace sf {

comm::Tag training_state_tag() { return comm::membership_tag(0xfffffff0u, 0); }

void send_training_state(comm::Transport& world, int peer, const TrainingState& state, int64_t step) {
  nlohmann::json head = {{"step", step}, {"scalars", state.scalars}, {"names", nlohmann::json::array()}};
  for (const auto& [name, t] : state.tensors) head["names"].push_back(name);
  world.send(peer, training_state_tag(), comm::text_tensor(head.dump()));
  for (const auto& [name, t] : state.tensors) world.send(peer, training_state_tag(), t);
}

ReceivedState recv_training_state(comm::Transport& world, int peer, std::chrono::milliseconds timeout) {
  const Tensor head_t = world.recv(peer, training_state_tag(), timeout);
  const std::string head_text = comm::tensor_text(head_t);
  comm::BufferPool::global().release(head_t);  // read: back to the pool
  SF_ENFORCE(head_t.dtype() == DType::kI32 && head_t.shape().size() == 1, Error,
             "elastic: rank {} sent a malformed state header", peer);
  nlohmann::json head = nlohmann::json::parse(head_text, nullptr, false);
  SF_ENFORCE(head.is_object() && head.contains("step") && head["step"].is_number_integer() &&
                 head.contains("scalars") && head["scalars"].is_object() && head.contains("names") &&
                 head["names"].is_array(),
             Error, "elastic: rank {} sent a malformed state header", peer);
  const auto arrived = std::chrono::steady_clock::now();
  ReceivedState out;
  out.step = head["step"].get<int64_t>();
  out.state.scalars = std::move(head["scalars"]);
  for (const auto& name : head["names"]) {
    SF_ENFORCE(name.is_string(), Error, "elastic: rank {} sent a malformed state header", peer);
    // Kept for as long as the state is, and sent on by a later change: the pool must not reuse it.
    Tensor t = comm::BufferPool::global().adopt(world.recv(peer, training_state_tag(), timeout));
    out.bytes += t.nbytes();
    out.state.tensors.emplace_back(name.get<std::string>(), std::move(t));
  }
  out.streamed = std::chrono::steady_clock::now() - arrived;
  return out;
}

}  // namespace sf
