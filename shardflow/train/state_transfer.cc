#include <shardflow/train/state_transfer.h>

#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/text_tensor.h>
#include <shardflow/core/error.h>

namespace sf {

namespace {

// A tensor below this travels in a pack with its neighbours; one at or above it alone, as it is.
// A message costs tens of microseconds whatever its size, and a state has a tensor per
// parameter and per optimizer moment (a ResNet's: hundreds, most of a few kilobytes); a copy of
// a small tensor into a pack costs less than its own message.
constexpr size_t kPackBelow = size_t{256} << 10;
// A pack is sent once it holds this much: the receiver cuts one pack while the next travels.
constexpr size_t kPackBytes = size_t{1} << 20;

// The tensors of `state` in messages: each entry the count of consecutive tensors one message
// carries (a tensor alone when it is large, or its neighbours are).
std::vector<size_t> message_groups(const TrainingState& state) {
  std::vector<size_t> groups;
  size_t packed = 0, bytes = 0;  // the pack being filled
  const auto flush = [&] {
    if (packed) groups.push_back(packed);
    packed = bytes = 0;
  };
  for (const auto& [name, t] : state.tensors) {
    if (t.nbytes() >= kPackBelow) {
      flush();
      groups.push_back(1);
      continue;
    }
    ++packed;
    bytes += t.nbytes();
    if (bytes >= kPackBytes) flush();
  }
  flush();
  return groups;
}

// The tensors [first, first + count) of `state` in one message: the tensor itself when alone,
// else their bytes one after another (every dtype is 4 bytes wide, so an f32 buffer holds them).
Tensor message_of(const TrainingState& state, size_t first, size_t count) {
  if (count == 1) return state.tensors[first].second;
  int64_t elements = 0;
  for (size_t i = first; i < first + count; ++i) elements += state.tensors[i].second.numel();
  Tensor pack = Tensor::empty({elements}, DType::kF32);
  auto* to = static_cast<char*>(pack.raw());
  for (size_t i = first; i < first + count; ++i) {
    const Tensor& t = state.tensors[i].second;
    std::memcpy(to, t.raw(), t.nbytes());
    to += t.nbytes();
  }
  return pack;
}

// What the header says of one tensor.
struct TensorHead {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
};

// The header's tensors and message groups, each checked; Error naming `peer` for anything else.
void parse_head(const nlohmann::json& head, int peer, std::vector<TensorHead>& tensors, std::vector<size_t>& groups) {
  const auto malformed = [&] { SF_THROW(Error, "elastic: rank {} sent a malformed state header", peer); };
  const nlohmann::json& names = head["names"];
  const nlohmann::json& dtypes = head["dtypes"];
  const nlohmann::json& shapes = head["shapes"];
  if (!dtypes.is_array() || !shapes.is_array() || dtypes.size() != names.size() || shapes.size() != names.size())
    malformed();
  for (size_t i = 0; i < names.size(); ++i) {
    if (!names[i].is_string() || !dtypes[i].is_string() || !shapes[i].is_array()) malformed();
    TensorHead t;
    t.name = names[i].get<std::string>();
    const std::string dtype = dtypes[i].get<std::string>();
    if (dtype != dtype_name(DType::kF32) && dtype != dtype_name(DType::kI32)) malformed();
    t.dtype = dtype == dtype_name(DType::kF32) ? DType::kF32 : DType::kI32;
    for (const auto& d : shapes[i]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t{1} << 40)) malformed();
      t.shape.push_back(d.get<int64_t>());
    }
    tensors.push_back(std::move(t));
  }
  size_t total = 0;
  for (const auto& g : head["groups"]) {
    if (!g.is_number_unsigned() || g.get<size_t>() == 0 || g.get<size_t>() > names.size() - total) malformed();
    groups.push_back(g.get<size_t>());
    total += groups.back();
  }
  if (total != names.size()) malformed();
}

}  // namespace

comm::Tag training_state_tag() { return comm::membership_tag(0xfffffff0u, 0); }
comm::Tag training_state_received_tag() { return comm::membership_tag(0xfffffff0u, 1); }

std::vector<uint64_t> training_state_message_bytes(const TrainingState& state) {
  std::vector<uint64_t> bytes;
  size_t first = 0;
  for (size_t count : message_groups(state)) {
    uint64_t n = 0;
    for (size_t i = first; i < first + count; ++i) n += static_cast<uint64_t>(state.tensors[i].second.nbytes());
    bytes.push_back(n);
    first += count;
  }
  return bytes;
}

void send_training_state(comm::Transport& world, int peer, const TrainingState& state, int64_t step) {
  const std::vector<size_t> groups = message_groups(state);
  nlohmann::json head = {{"step", step},
                         {"scalars", state.scalars},
                         {"names", nlohmann::json::array()},
                         {"dtypes", nlohmann::json::array()},
                         {"shapes", nlohmann::json::array()},
                         {"groups", groups}};
  for (const auto& [name, t] : state.tensors) {
    head["names"].push_back(name);
    head["dtypes"].push_back(dtype_name(t.dtype()));
    head["shapes"].push_back(t.shape());
  }
  world.send(peer, training_state_tag(), comm::text_tensor(head.dump()));
  size_t first = 0;
  for (size_t count : groups) {
    world.send(peer, training_state_tag(), message_of(state, first, count));
    first += count;
  }
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
                 head["names"].is_array() && head.contains("groups") && head["groups"].is_array(),
             Error, "elastic: rank {} sent a malformed state header", peer);
  std::vector<TensorHead> tensors;
  std::vector<size_t> groups;
  parse_head(head, peer, tensors, groups);
  const auto arrived = std::chrono::steady_clock::now();
  ReceivedState out;
  out.step = head["step"].get<int64_t>();
  out.state.scalars = std::move(head["scalars"]);
  size_t first = 0;
  for (size_t count : groups) {
    const Tensor got = world.recv(peer, training_state_tag(), timeout);
    int64_t elements = 0;
    for (size_t i = first; i < first + count; ++i) elements += numel(tensors[i].shape);
    SF_ENFORCE(got.numel() == elements && (count > 1 || got.dtype() == tensors[first].dtype), Error,
               "elastic: rank {} sent {} elements of {} for '{}'", peer, got.numel(), elements,
               tensors[first].name);
    if (count == 1) {
      // Kept for as long as the state is, and sent on by a later change: the pool must not reuse it.
      Tensor t = comm::BufferPool::global().adopt(got);
      if (t.shape() != tensors[first].shape) t = t.view(tensors[first].shape);
      out.bytes += t.nbytes();
      out.state.tensors.emplace_back(tensors[first].name, std::move(t));
    } else {
      const auto* from = static_cast<const char*>(got.raw());
      for (size_t i = first; i < first + count; ++i) {
        Tensor t = Tensor::empty(tensors[i].shape, tensors[i].dtype);
        std::memcpy(t.raw(), from, t.nbytes());
        from += t.nbytes();
        out.bytes += t.nbytes();
        out.state.tensors.emplace_back(tensors[i].name, std::move(t));
      }
      comm::BufferPool::global().release(got);  // copied out: back to the pool
    }
    first += count;
  }
  out.streamed = std::chrono::steady_clock::now() - arrived;
  return out;
}

}  // namespace sf
