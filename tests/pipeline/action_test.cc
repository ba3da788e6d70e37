// Tests for the action text form (pipeline/action.h): every kind round-trips with and without
// a chunk, chunk 0 has one spelling, and malformed text is refused naming the text.
#include <shardflow/pipeline/action.h>

#include <gtest/gtest.h>

#include <shardflow/core/error.h>

namespace sf::pipeline {
namespace {

TEST(Action, EveryKindRoundTrips) {
  for (int k = 0; k < kActionKinds; ++k) {
    for (int chunk : {0, 1, 12}) {
      const Action action{static_cast<ActionKind>(k), 37, chunk};
      const std::string text = to_string(action);
      EXPECT_EQ(parse_action(text), action) << text;
      EXPECT_EQ(to_string(parse_action(text)), text);
    }
  }
}

TEST(Action, TextFormExamples) {
  EXPECT_EQ(to_string({ActionKind::kForward, 3, 0}), "F3");
  EXPECT_EQ(to_string({ActionKind::kBackward, 0, 1}), "B0.1");
  EXPECT_EQ(to_string({ActionKind::kWeight, 7, 0}), "W7");
  EXPECT_EQ(to_string({ActionKind::kSendActivation, 2, 0}), "SEND_F2");
  EXPECT_EQ(to_string({ActionKind::kRecvGradient, 4, 1}), "RECV_B4.1");
  EXPECT_EQ(parse_action("F3.0"), (Action{ActionKind::kForward, 3, 0}));
  EXPECT_EQ(to_string(parse_action("F3.0")), "F3");
}

TEST(Action, MalformedTextIsRefusedNamingIt) {
  for (const char* bad : {"", "X3", "F", "F-1", "F3.", "F3.x", "F3 ", "f3", "SEND3", "F3.1.2", "B+2"}) {
    try {
      parse_action(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sf::pipeline
