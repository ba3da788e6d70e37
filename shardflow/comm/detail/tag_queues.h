// The messages a receiver holds from one source, FIFO per tag: the receive side every
// backend shares. Not synchronised: the owner guards it with its own mutex.
#pragma once

#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/transport.h>

namespace sf::comm::detail {

class TagQueues {
 public:
  void push(Tag tag, Tensor t) { queues_[tag].push_back(std::move(t)); }
  bool has(Tag tag) const {
    auto it = queues_.find(tag);
    return it != queues_.end() && !it->second.empty();
  }
  // The oldest message under `tag`, removed, if there is one.
  std::optional<Tensor> pop(Tag tag) {
    auto it = queues_.find(tag);
    if (it == queues_.end() || it->second.empty()) return std::nullopt;
    Tensor t = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) queues_.erase(it);
    return t;
  }
  // Moves every held message out, e.g. to release them outside the owner's lock.
  TagQueues take_all() {
    TagQueues out;
    out.queues_.swap(queues_);
    return out;
  }
  // Returns every held message's buffer to the pool (no-op for unpooled tensors).
  void release_all() {
    for (auto& [tag, queue] : queues_)
      for (const Tensor& t : queue) BufferPool::global().release(t);
    queues_.clear();
  }

 private:
  std::unordered_map<Tag, std::deque<Tensor>> queues_;
};

}  // namespace sf::comm::detail
