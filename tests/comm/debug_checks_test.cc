// Debug-mode signature checks and the flight recorder (comm/debug.h, comm/flight_recorder.h):
// ranks that disagree on a collective are refused on every rank with one message naming what
// each rank called, before any data moves, and the group stays usable; a timed-out call leaves
// the group's last collectives on stderr.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include <shardflow/comm/comm.h>
#include <shardflow/comm/debug.h>
#include <shardflow/comm/detail/signature.h>
#include "rank_threads.h"
#include "wrappers.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;
using detail::Signature;

class DebugChecks : public ::testing::Test {
 protected:
  void SetUp() override { set_debug_checks(true); }
  void TearDown() override { set_debug_checks(false); }
};

// Runs `op(rank, group)` on n ranks behind counting transports and returns each rank's error
// text ("" when it succeeded), with every rank's count of messages sent.
struct Outcome {
  std::vector<std::string> errors;
  std::vector<int> sends;
};

Outcome run_on(int n, const std::function<void(int, const Group&)>& op, std::vector<Group>* keep = nullptr) {
  auto world = make_inproc_world(n);
  std::vector<std::shared_ptr<commtest::CountingTransport>> counting;
  std::vector<Group> groups;
  for (int r = 0; r < n; ++r) {
    counting.push_back(std::make_shared<commtest::CountingTransport>(world[r]));
    groups.push_back(world_group(counting.back()));
  }
  auto errs = commtest::run_ranks_collect(n, [&](int r) { op(r, groups[r]); });
  Outcome out;
  for (int r = 0; r < n; ++r) {
    std::string text;
    if (errs[r]) {
      try {
        std::rethrow_exception(errs[r]);
      } catch (const InvalidArgument& e) {
        text = e.what();
      } catch (const std::exception& e) {
        text = std::string("unexpected error type: ") + e.what();
      }
    }
    out.errors.push_back(text);
    out.sends.push_back(counting[r]->sends.load());
  }
  if (keep) *keep = groups;
  return out;
}

TEST(Signature, RoundTripsThroughItsWireForm) {
  Signature s = Signature::of("AlltoAll", Tensor::zeros({4, 8}, DType::kI32));
  s.with("split_count", 4).with("split_dim", 1).with("big", int64_t{1} << 40);
  const Signature d = Signature::decode(s.encode());
  EXPECT_EQ(d.describe(), s.describe());
  EXPECT_TRUE(d.matches(s));
  EXPECT_EQ(d.describe(), "AlltoAll i32(4, 8) split_count=4 split_dim=1 big=1099511627776");
}

TEST(Signature, MalformedWireFormIsRefused) {
  Tensor t = Signature::of("AllReduce", Tensor::zeros({3})).encode();
  EXPECT_THROW(Signature::decode(Tensor::from_vector({2}, std::vector<int32_t>{9, 65})), InvalidArgument);
  EXPECT_THROW(Signature::decode(Tensor::zeros({t.numel()})), InvalidArgument);  // f32, not i32
  Tensor longer = Tensor::zeros({t.numel() + 1}, DType::kI32);
  std::copy(t.data<int32_t>(), t.data<int32_t>() + t.numel(), longer.data<int32_t>());
  EXPECT_THROW(Signature::decode(longer), InvalidArgument);  // trailing word
}

TEST(Signature, ShapesOnlyMatterWhereTheCollectiveNeedsThem) {
  EXPECT_FALSE(Signature::of("AllReduce", Tensor::zeros({4})).matches(Signature::of("AllReduce", Tensor::zeros({5}))));
  EXPECT_TRUE(Signature::of("NeighborExchangeV2", Tensor::zeros({4}), false)
                  .matches(Signature::of("NeighborExchangeV2", Tensor::zeros({5}), false)));
  EXPECT_FALSE(Signature::of("AllReduce", Tensor::zeros({4})).matches(Signature::of("AllGather", Tensor::zeros({4}))));
}

TEST_F(DebugChecks, ShapesThatDifferAcrossRanksAreNamedOnEveryRankBeforeDataMoves) {
  std::vector<Group> groups;
  const Outcome o = run_on(3, [](int r, const Group& g) {
    const Shape shape = r == 1 ? Shape{4, 9} : Shape{4, 8};
    all_reduce(Tensor::zeros(shape), {.group = g, .timeout = 10s});
  }, &groups);
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(o.errors[r].find("ranks disagree on the call"), std::string::npos) << o.errors[r];
    EXPECT_NE(o.errors[r].find("ranks 0, 2 called AllReduce f32(4, 8) op=0"), std::string::npos) << o.errors[r];
    EXPECT_NE(o.errors[r].find("rank 1 called AllReduce f32(4, 9) op=0"), std::string::npos) << o.errors[r];
    EXPECT_EQ(o.sends[r], 2) << "rank " << r << " sent more than its signature to each peer";
  }
  EXPECT_EQ(o.errors[0], o.errors[2]);
}

TEST_F(DebugChecks, DifferentCollectivesAndOptionsAreRefused) {
  Outcome o = run_on(2, [](int r, const Group& g) {
    const Tensor t = Tensor::zeros({8});
    if (r == 0) all_reduce(t, {.group = g, .timeout = 10s});
    else all_gather(t, {.group = g, .timeout = 10s});
  });
  for (const auto& e : o.errors) {
    EXPECT_NE(e.find("rank 0 called AllReduce f32(8,) op=0"), std::string::npos) << e;
    EXPECT_NE(e.find("rank 1 called AllGather f32(8,)"), std::string::npos) << e;
  }
  o = run_on(2, [](int r, const Group& g) {
    broadcast(Tensor::zeros({8}, DType::kI32), {.group = g, .root = r, .timeout = 10s});
  });
  for (const auto& e : o.errors) EXPECT_NE(e.find("rank 1 called Broadcast i32(8,) root=1"), std::string::npos) << e;
}

TEST_F(DebugChecks, GroupStaysUsableAfterARefusedCall) {
  std::vector<float> got(2);
  const Outcome o = run_on(2, [&](int r, const Group& g) {
    EXPECT_THROW(all_reduce(Tensor::zeros({r + 1}), {.group = g, .timeout = 10s}), InvalidArgument);
    got[r] = all_reduce(Tensor::full({3}, 1.0f + r), {.group = g, .timeout = 10s}).data<float>()[2];
  });
  EXPECT_EQ(o.errors[0], "");
  EXPECT_EQ(got[0], 3.0f);
  EXPECT_EQ(got[1], 3.0f);
}

TEST_F(DebugChecks, MatchingCallsGiveTheSameResultsAsWithoutChecks) {
  std::vector<Tensor> out(4);
  run_on(4, [&](int r, const Group& g) {
    out[r] = all_reduce(Tensor::full({1000}, static_cast<float>(r)), {.group = g, .timeout = 10s});
  });
  for (int r = 0; r < 4; ++r) EXPECT_EQ(out[r].data<float>()[999], 6.0f);
}

TEST(FlightRecorder, KeepsTheLastCallsOldestFirst) {
  FlightRecorder rec(3);
  for (uint32_t s = 0; s < 5; ++s) rec.begin(s, "AllReduce f32(4) op=0");
  rec.end(3, FlightRecord::State::kDone);
  rec.end(4, FlightRecord::State::kFailed, "rank 2 did not take part\nsecond line");
  rec.end(0, FlightRecord::State::kDone);  // no longer kept: ignored
  const auto r = rec.records();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].seq, 2u);
  EXPECT_EQ(r[0].state, FlightRecord::State::kRunning);
  EXPECT_EQ(r[1].state, FlightRecord::State::kDone);
  EXPECT_EQ(r[2].error, "rank 2 did not take part");
  const std::string d = rec.dump("header");
  EXPECT_NE(d.find("seq 2 AllReduce f32(4) op=0: running for"), std::string::npos) << d;
  EXPECT_NE(d.find("seq 4 AllReduce f32(4) op=0: failed in"), std::string::npos) << d;
}

TEST(FlightRecorder, ATimedOutCollectiveDumpsTheGroupsLastCalls) {
  auto world = make_inproc_world(2);
  Group g0 = world_group(world[0]), g1 = world_group(world[1]);
  ::testing::internal::CaptureStderr();
  commtest::run_ranks(2, [&](int r) {
    const Group& g = r == 0 ? g0 : g1;
    all_reduce(Tensor::full({5}, 1.0f), {.group = g, .timeout = 10s});
    broadcast(Tensor::zeros({7}, DType::kI32), {.group = g, .root = 1, .timeout = 10s});
    if (r == 0) {
      EXPECT_THROW(all_gather(Tensor::zeros({2}), {.group = g, .timeout = 200ms}), PeerLost);
    }
  });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("rank 0: AllGather timed out; flight recorder of group 'world' (last 3 collectives"),
            std::string::npos) << err;
  EXPECT_NE(err.find("seq 0 AllReduce f32(5,) op=0: done in"), std::string::npos) << err;
  EXPECT_NE(err.find("seq 1 Broadcast i32(7,) root=1: done in"), std::string::npos) << err;
  EXPECT_NE(err.find("seq 2 AllGather f32(2,): failed in"), std::string::npos) << err;
  EXPECT_NE(err.find("rank 1 did not take part"), std::string::npos) << err;
  const auto recs = g0.flight_recorder().records();
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[2].state, FlightRecord::State::kFailed);
  EXPECT_EQ(g1.flight_recorder().records().size(), 2u);
}

}  // namespace
}  // namespace sf::comm
