// send_training_state / recv_training_state (train/state_transfer.h): how a rank that joins a
// running elastic job, and every member after a change, gets the new rank 0's state. What is
// received equals what was sent, tensor by tensor and bit by bit, with the scalars and the step
// (small tensors packed into a few messages);
// it travels under a membership tag, so an interrupted transport still carries it (zmq: real
// sockets, the bytes copied); a malformed
// header is refused in one line and a silent sender is named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <shardflow/comm/zmq/transport.h>
#include <shardflow/core/error.h>
#include <shardflow/train/state_transfer.h>

namespace sf {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace state_transfer_test {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

TrainingState a_state() {
  TrainingState s;
  s.tensors.emplace_back("dense.weight", Tensor::from_vector({2, 3}, std::vector<float>{1.5f, -0.f, 3e-38f, 7, 8, 9}));
  s.tensors.emplace_back("moments.dense.weight", Tensor::full({2, 3}, 0.25f));
  s.tensors.emplace_back("global_step", Tensor::from_vector({1}, std::vector<int32_t>{17}));
  s.scalars = {{"global_step", 17}, {"epoch", 1}, {"step_in_epoch", 2}, {"ranks", 3}, {"optimizer", {{"lr", 0.01}}}};
  return s;
}

// `got` holds `sent`'s tensors in its order, names, dtypes, shapes and bytes alike, and counts
// their bytes.
void transfer_expect_tensors(const ReceivedState& got, const TrainingState& sent) {
  ASSERT_EQ(got.state.tensors.size(), sent.tensors.size());
  uint64_t bytes = 0;
  for (size_t i = 0; i < sent.tensors.size(); ++i) {
    const auto& [name, t] = sent.tensors[i];
    EXPECT_EQ(got.state.tensors[i].first, name);
    const Tensor& u = got.state.tensors[i].second;
    ASSERT_EQ(u.dtype(), t.dtype()) << name;
    ASSERT_EQ(u.shape(), t.shape()) << name;
    EXPECT_EQ(std::memcmp(u.raw(), t.raw(), t.nbytes()), 0) << name;
    bytes += t.nbytes();
  }
  EXPECT_EQ(got.bytes, bytes);
}

TEST(StateTransfer, WhatArrivesIsWhatWasSentBitwise) {
  auto world = comm::make_zmq_world(2);
  const TrainingState sent = a_state();
  send_training_state(*world[0], 1, sent, 17);
  const ReceivedState got = recv_training_state(*world[1], 0, 5s);
  EXPECT_EQ(got.step, 17);
  EXPECT_EQ(got.state.scalars, sent.scalars);
  transfer_expect_tensors(got, sent);
}

// A state of many small tensors (a ResNet's parameters and moments), an i32 among them, and a large
// one: the small ones travel packed together, a few messages in all, and arrive as they were.
TEST(StateTransfer, SmallTensorsTravelPackedAndArriveAsTheyWere) {
  auto world = comm::make_zmq_world(2);
  TrainingState sent;
  for (int i = 0; i < 200; ++i) {
    std::vector<float> v(static_cast<size_t>(3 + i % 7));
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(i) + 0.125f * static_cast<float>(k);
    sent.tensors.emplace_back("p" + std::to_string(i), Tensor::from_vector({static_cast<int64_t>(v.size())}, v));
    if (i == 100) sent.tensors.emplace_back("global_step", Tensor::from_vector({}, std::vector<int32_t>{-5}));
  }
  std::vector<float> large(128 * 1024);
  for (size_t k = 0; k < large.size(); ++k) large[k] = static_cast<float>(k % 1000) - 0.5f;
  sent.tensors.emplace_back("large", Tensor::from_vector({128, 1024}, large));
  sent.tensors.emplace_back("after", Tensor::full({2, 2}, 3.0f));
  sent.scalars = {{"epoch", 1}};
  auto* receiver = dynamic_cast<comm::zmq::ZmqTransport*>(world[1].get());
  ASSERT_NE(receiver, nullptr);
  const uint64_t before = receiver->stats().messages_received;
  send_training_state(*world[0], 1, sent, 9);
  const ReceivedState got = recv_training_state(*world[1], 0, 5s);
  // The header, a pack of the 201 small tensors, the large one, a pack of the last.
  EXPECT_LE(receiver->stats().messages_received - before, 4u);
  transfer_expect_tensors(got, sent);
}

// A rank whose world changes again before its first step sends on the state it received (the
// agreed step's): the send hands the buffer's reference to the message, which gives it back to
// the pool once the bytes have left. The received state must not be the pool's buffer then, or
// the next message received into it overwrites the state the rank goes on from.
TEST(StateTransfer, AReceivedStateSentOnIsNotOverwrittenByLaterMessages) {
  auto world = comm::make_zmq_world(2);
  TrainingState big;
  std::vector<float> values(64 * 1024);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  big.tensors.emplace_back("w", Tensor::from_vector({256, 256}, values));
  big.scalars = {{"epoch", 0}};
  send_training_state(*world[0], 1, big, 4);
  const ReceivedState got = recv_training_state(*world[1], 0, 5s);
  send_training_state(*world[1], 0, got.state, 4);  // sent on, as the next change's rank 0 does
  (void)recv_training_state(*world[0], 1, 5s);
  // Messages of the same size go through the pool after it: none may land in the kept state.
  for (int k = 0; k < 4; ++k) {
    world[0]->send(1, comm::membership_tag(7, 0), Tensor::full({256, 256}, -1.0f));
    (void)world[1]->recv(0, comm::membership_tag(7, 0), 5s);
  }
  const Tensor& kept = got.state.tensors.at(0).second;
  ASSERT_EQ(kept.numel(), static_cast<int64_t>(values.size()));
  EXPECT_EQ(std::memcmp(kept.raw(), values.data(), values.size() * sizeof(float)), 0)
      << "the received state was overwritten through the pool";
}

TEST(StateTransfer, AnInterruptedTransportStillCarriesIt) {
  auto world = comm::make_zmq_world(2);
  world[1]->interrupt(0, "a join (test)");  // as every rank's is while a change is agreed on
  send_training_state(*world[0], 1, a_state(), 3);
  EXPECT_EQ(recv_training_state(*world[1], 0, 5s).step, 3);
}

TEST(StateTransfer, AMalformedHeaderIsRefusedInOneLine) {
  auto world = comm::make_zmq_world(2);
  const std::string junk = "{\"step\": \"x\"}";
  std::vector<int32_t> chars(junk.begin(), junk.end());
  world[0]->send(1, training_state_tag(), Tensor::from_vector({static_cast<int64_t>(chars.size())}, chars));
  try {
    recv_training_state(*world[1], 0, 5s);
    ADD_FAILURE() << "a malformed header was taken";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 0 sent a malformed state header"));
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

TEST(StateTransfer, ASilentSenderIsNamed) {
  auto world = comm::make_zmq_world(2);
  EXPECT_THROW(recv_training_state(*world[1], 0, 50ms), PeerLost);
}

}  // namespace state_transfer_test
}  // namespace
}  // namespace sf
