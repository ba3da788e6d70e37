// Test fixture for bad-input tests: rank 0 of a 4-rank inproc world behind a counting
// transport, and expect_refused(), which checks that a call throws InvalidArgument naming
// what is wrong before any message moves or any sequence number is taken.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/comm/comm.h>
#include "wrappers.h"

namespace sf::commtest {

class RefusalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    world_ = comm::make_inproc_world(4);
    counting_ = std::make_shared<CountingTransport>(world_[0]);
    group_ = comm::world_group(counting_);
  }
  // Runs f, expects InvalidArgument (or a subclass) containing every needle, and no message.
  void expect_refused(const std::function<void()>& f, std::initializer_list<std::string> needles) {
    try {
      f();
      ADD_FAILURE() << "not refused";
    } catch (const InvalidArgument& e) {
      for (const auto& s : needles) EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << e.what();
    }
    EXPECT_EQ(counting_->sends.load(), 0);
    EXPECT_EQ(counting_->recvs.load(), 0);
    EXPECT_EQ(group_.next_sequence(), seq_++) << "a refused call must not take a sequence number";
  }

  std::vector<std::shared_ptr<comm::Transport>> world_;
  std::shared_ptr<CountingTransport> counting_;
  comm::Group group_;
  uint32_t seq_ = 0;
};

}  // namespace sf::commtest
