// Transport decorators for tests: count messages (to prove that bad input fails before any
// byte moves) and delay receivers (to expose an algorithm that sends a buffer its caller
// may overwrite after the collective returns).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include <shardflow/comm/transport.h>

namespace sf::commtest {

class CountingTransport final : public comm::Transport {
 public:
  explicit CountingTransport(std::shared_ptr<comm::Transport> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string_view name() const override { return inner_->name(); }
  void send(int peer, comm::Tag tag, const Tensor& t) override {
    ++sends;
    inner_->send(peer, tag, t);
  }
  Tensor recv(int peer, comm::Tag tag, std::chrono::milliseconds timeout) override {
    ++recvs;
    return inner_->recv(peer, tag, timeout);
  }
  void close() override { inner_->close(); }
  // The same capabilities as the wrapped endpoint: every rank of a world must answer alike.
  bool passes_by_reference() const override { return inner_->passes_by_reference(); }
  comm::NativeCollectives* native_collectives() override { return inner_->native_collectives(); }

  std::atomic<int> sends{0};
  std::atomic<int> recvs{0};

 private:
  std::shared_ptr<comm::Transport> inner_;
};

// Sleeps after a message arrives and before handing it over: the receiver reads the
// sender's buffer late, after the sender may already have returned from its collective.
class SlowReaderTransport final : public comm::Transport {
 public:
  SlowReaderTransport(std::shared_ptr<comm::Transport> inner, std::chrono::microseconds delay)
      : inner_(std::move(inner)), delay_(delay) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string_view name() const override { return inner_->name(); }
  void send(int peer, comm::Tag tag, const Tensor& t) override { inner_->send(peer, tag, t); }
  Tensor recv(int peer, comm::Tag tag, std::chrono::milliseconds timeout) override {
    Tensor t = inner_->recv(peer, tag, timeout);
    std::this_thread::sleep_for(delay_);
    return t;
  }
  void close() override { inner_->close(); }
  // Forwarded, so that the slow readers run the same algorithms as their peers (the table
  // depends on these): the by-reference ones are then checked against late readers too.
  bool passes_by_reference() const override { return inner_->passes_by_reference(); }
  comm::NativeCollectives* native_collectives() override { return inner_->native_collectives(); }

 private:
  std::shared_ptr<comm::Transport> inner_;
  std::chrono::microseconds delay_;
};

}  // namespace sf::commtest
