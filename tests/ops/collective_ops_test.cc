// The collective graph ops without communication: shape inference from the group size, bad
// attributes refused at build time naming the op and the rule, the backward nodes each
// gradient rule emits (MindSpore's bprops), and the sequential Executor's refusal. Running
// them over real ranks is tests/actors/collective_*_test.cc.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <shardflow/ops/autodiff.h>
#include <shardflow/ops/builder.h>
#include <shardflow/ops/collective_builder.h>
#include <shardflow/ops/executor.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::floats;
using optest::random_away_from_zero;

const GroupRef kGroup{"dp", 4};

// Expects `build` to throw InvalidArgument (ShapeError is one) whose message holds every part.
void expect_refused(const std::function<void(GraphBuilder&, CollectiveBuilder&)>& build,
                    const std::vector<std::string>& parts) {
  Graph g;
  GraphBuilder gb(g);
  CollectiveBuilder cb(gb, kGroup);
  try {
    build(gb, cb);
    ADD_FAILURE() << "not refused; expected an error with '" << parts[0] << "'";
  } catch (const InvalidArgument& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

const std::vector<int64_t> kNoNeighbours(8, -1);

TEST(CollectiveOps, ShapesFollowTheGroupSize) {
  Graph g;
  GraphBuilder gb(g);
  CollectiveBuilder cb(gb, kGroup);
  const Value x = gb.input("x", {4, 6});
  EXPECT_EQ(gb.shape(cb.all_reduce(x, "max")), (Shape{4, 6}));
  EXPECT_EQ(gb.shape(cb.all_gather(x)), (Shape{16, 6}));
  EXPECT_EQ(gb.shape(cb.reduce_scatter(x)), (Shape{1, 6}));
  EXPECT_EQ(gb.shape(cb.broadcast(x, 3)), (Shape{4, 6}));
  EXPECT_EQ(gb.shape(cb.all_to_all(x, 4, 0, 1)), (Shape{1, 24}));
  EXPECT_EQ(gb.shape(cb.all_to_all(x, 4, -2, -2)), (Shape{4, 6}));
  const std::vector<Value> got =
      cb.neighbor_exchange({x, gb.input("y", {3})}, {1, 2}, {3, 0, 1}, {{2, 2}, {5}, {}}, {{4, 6}, {3}}, DType::kI32);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(gb.shape(got[0]), (Shape{2, 2}));
  EXPECT_EQ(gb.shape(got[2]), Shape{});
  EXPECT_EQ(gb.dtype(got[1]), DType::kI32);
  const Value img = gb.input("img", {1, 2, 4, 5});
  // No right neighbour: its recv_lens (4) does not grow the output (MindSpore's rule).
  const Value halo = cb.neighbor_exchange_v2(img, {1, -1, 2, -1, 3, -1, -1, -1}, {1, 1, 0, 2},
                                             {1, -1, -1, -1, 3, 0, 2, -1}, {1, 2, 3, 4});
  EXPECT_EQ(gb.shape(halo), (Shape{1, 2, 1 + 4 + 2, 3 + 5 + 0}));
  EXPECT_EQ(gb.shape(cb.send(x, 7, 2)), Shape{});
  EXPECT_EQ(gb.shape(cb.receive(7, 2, {2, 3}, DType::kI32)), (Shape{2, 3}));
}

TEST(CollectiveOps, BadAttributesAreRefusedAtBuildTime) {
  const auto x = [](GraphBuilder& gb) { return gb.input("x", {4, 6}); };
  expect_refused([&](auto& gb, auto& cb) { cb.all_to_all(x(gb), 4, 1, 0); },
                 {"AlltoAll", "split_dim 1", "not divisible by split_count 4"});
  expect_refused([&](auto& gb, auto& cb) { cb.all_to_all(x(gb), 2, 0, 0); },
                 {"AlltoAll", "split_count 2 must equal the size 4 of group 'dp'"});
  expect_refused([&](auto& gb, auto& cb) { cb.all_to_all(x(gb), 4, 2, 0); }, {"split_dim = 2 is out of range"});
  expect_refused([&](auto& gb, auto& cb) { cb.broadcast(x(gb), 4); },
                 {"Broadcast", "root_rank 4 is out of range for group 'dp' of size 4"});
  expect_refused([&](auto& gb, auto& cb) { cb.reduce_scatter(gb.input("y", {6, 2})); },
                 {"ReduceScatter", "dim 0 of input (6, 2) must be divisible by the size 4"});
  expect_refused([&](auto& gb, auto& cb) { cb.all_reduce(x(gb), "mean"); }, {"AllReduce", "'mean' is not a reduction"});
  expect_refused([&](auto& gb, auto&) { gb.op("AllReduce", {x(gb)}, {{"group", std::string("dp")}}); },
                 {"AllReduce", "group_size"});
  expect_refused([&](auto& gb, auto& cb) { cb.send(x(gb), 0, 4); }, {"Send", "dest_rank = 4 is not a rank"});
  expect_refused([&](auto&, auto& cb) { cb.receive(0, -1, {2}); }, {"Receive", "src_rank = -1 is not a rank"});
  expect_refused([&](auto& gb, auto& cb) { cb.neighbor_exchange({x(gb)}, {4}, {}, {}, {{4, 6}}); },
                 {"NeighborExchange", "send_rank_ids[0] = 4 is not a rank of group 'dp'"});
  expect_refused([&](auto& gb, auto& cb) { cb.neighbor_exchange({x(gb)}, {1}, {}, {}, {{6, 4}}); },
                 {"NeighborExchange", "input 0 has shape (4, 6) but send_shapes[0] is (6, 4)"});
  expect_refused([&](auto& gb, auto& cb) { cb.neighbor_exchange({x(gb)}, {1}, {2}, {}, {{4, 6}}); },
                 {"NeighborExchange", "0 recv_shapes for 1 recv_rank_ids"});

  const auto img = [](GraphBuilder& gb) { return gb.input("img", {1, 1, 4, 3}); };
  expect_refused([&](auto& gb, auto& cb) { cb.neighbor_exchange_v2(img(gb), kNoNeighbours, {5, 0, 0, 0}, kNoNeighbours, {0, 0, 0, 0}); },
                 {"NeighborExchangeV2", "send_lens[0] (top) = 5 is larger than H = 4",
                  "lengths inconsistent with the shape"});
  expect_refused([&](auto& gb, auto& cb) { cb.neighbor_exchange_v2(img(gb), kNoNeighbours, {0, 0, 0, 4}, kNoNeighbours, {0, 0, 0, 0}); },
                 {"send_lens[3] (right) = 4 is larger than W = 3"});
  expect_refused([&](auto& gb, auto& cb) { cb.neighbor_exchange_v2(img(gb), {-1, -1, 1}, {0, 0, 0, 0}, kNoNeighbours, {0, 0, 0, 0}); },
                 {"send_rank_ids has 3 entries; it needs 8"});
  expect_refused([&](auto& gb, auto& cb) { cb.neighbor_exchange_v2(img(gb), kNoNeighbours, {0, 0, 0}, kNoNeighbours, {0, 0, 0, 0}); },
                 {"send_lens has 3 entries; it needs 4"});
  expect_refused([&](auto& gb, auto& cb) { cb.neighbor_exchange_v2(img(gb), kNoNeighbours, {0, 0, 0, 0}, kNoNeighbours, {0, -1, 0, 0}); },
                 {"recv_lens[1] (bottom) = -1 is negative"});
  expect_refused([&](auto& gb, auto& cb) { cb.neighbor_exchange_v2(img(gb), kNoNeighbours, {0, 0, 0, 0}, {1, 2, -1, -1, -1, -1, -1, -1}, {1, 0, 0, 0}); },
                 {"recv_rank_ids[1] (top_right) = 2 but top = 1 and right = -1",
                  "a corner has a neighbour only when both sides next to it have one"});
  expect_refused([&](auto& gb, auto& cb) { cb.neighbor_exchange_v2(img(gb), kNoNeighbours, {0, 0, 0, 0}, kNoNeighbours, {0, 0, 0, 0}, "NHWC"); },
                 {"data_format 'NHWC' is not supported"});
  expect_refused([&](auto& gb, auto& cb) { cb.neighbor_exchange_v2(gb.input("v", {4, 3}), kNoNeighbours, {0, 0, 0, 0}, kNoNeighbours, {0, 0, 0, 0}); },
                 {"input (4, 3) is not 4-D"});
}

// The ops and attributes of the backward nodes appended by gradients().
struct Backward {
  Graph g;
  int forward_nodes = 0;
  int dx = -1;
  std::vector<const Node*> nodes(const std::string& op) const {
    std::vector<const Node*> out;
    for (const Node& n : g.nodes())
      if (n.id >= forward_nodes && n.op == op) out.push_back(&n);
    return out;
  }
};

// loss = ReduceSum(op(x)); returns the backward of x.
void differentiate(Backward& b, const Shape& x_shape, const std::function<Value(GraphBuilder&, CollectiveBuilder&, Value)>& op) {
  GraphBuilder gb(b.g);
  CollectiveBuilder cb(gb, kGroup);
  const Value x = gb.parameter("x", x_shape);
  const Value loss = gb.reduce_sum(op(gb, cb, x));
  b.forward_nodes = b.g.size();
  b.dx = gradients(b.g, loss.id, {x.id})[0];
  EXPECT_EQ(b.g.node(b.dx).shape, x_shape);
}

TEST(CollectiveOps, GradientsAreMindSporesBprops) {
  {
    Backward b;
    differentiate(b, {4, 2}, [](auto&, auto& cb, Value x) { return cb.all_reduce(x); });
    const auto ar = b.nodes("AllReduce");
    ASSERT_EQ(ar.size(), 1u);
    EXPECT_EQ(ar[0]->attrs.get_str("op"), "sum");
    EXPECT_EQ(ar[0]->attrs.get_str("group"), "dp");
    EXPECT_EQ(ar[0]->attrs.get_int("group_size"), 4);
    EXPECT_EQ(b.dx, ar[0]->id);
  }
  {
    Backward b;
    differentiate(b, {4, 2}, [](auto&, auto& cb, Value x) { return cb.all_reduce(x, "max"); });
    ASSERT_EQ(b.nodes("AllReduce").size(), 1u);
    ASSERT_EQ(b.nodes("Equal").size(), 1u);
    EXPECT_EQ(b.g.node(b.dx).op, "Mul");
  }
  {
    Backward b;
    differentiate(b, {4, 2}, [](auto&, auto& cb, Value x) { return cb.all_reduce(x, "prod"); });
    ASSERT_EQ(b.nodes("AllReduce").size(), 1u);
    EXPECT_EQ(b.g.node(b.dx).op, "RealDiv");
  }
  {
    Backward b;
    differentiate(b, {2, 3}, [](auto&, auto& cb, Value x) { return cb.all_gather(x); });
    ASSERT_EQ(b.nodes("ReduceScatter").size(), 1u);
    EXPECT_EQ(b.g.node(b.dx).op, "ReduceScatter");
  }
  {
    Backward b;
    differentiate(b, {8, 3}, [](auto&, auto& cb, Value x) { return cb.reduce_scatter(x); });
    EXPECT_EQ(b.g.node(b.dx).op, "AllGather");
  }
  {
    Backward b;
    differentiate(b, {8, 3}, [](auto&, auto& cb, Value x) { return cb.broadcast(x, 1); });
    EXPECT_TRUE(b.nodes("Broadcast").empty());  // MindSpore passes dout through
  }
  {
    Backward b;
    differentiate(b, {4, 8}, [](auto&, auto& cb, Value x) { return cb.all_to_all(x, 4, 1, 0); });
    const Node& n = b.g.node(b.dx);
    EXPECT_EQ(n.op, "AlltoAll");
    EXPECT_EQ(n.attrs.get_int("split_dim"), 0);
    EXPECT_EQ(n.attrs.get_int("concat_dim"), 1);
  }
  {
    Backward b;
    differentiate(b, {2, 3}, [](auto&, auto& cb, Value x) {
      return cb.neighbor_exchange({x}, {1}, {2, 3}, {{5}, {1, 2}}, {{2, 3}})[1];
    });
    const auto ne = b.nodes("NeighborExchange");
    ASSERT_EQ(ne.size(), 1u);
    EXPECT_EQ(ne[0]->attrs.get_ints("send_rank_ids"), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(ne[0]->attrs.get_ints("recv_rank_ids"), (std::vector<int64_t>{1}));
    EXPECT_EQ(ne[0]->attrs.get_ints("send_shapes"), encode_shapes({{5}, {1, 2}}));
    EXPECT_EQ(ne[0]->attrs.get_ints("recv_shapes"), encode_shapes({{2, 3}}));
    EXPECT_EQ(ne[0]->shape, (Shape{6}));
  }
  {
    Backward b;
    differentiate(b, {1, 1, 4, 4}, [](auto&, auto& cb, Value x) {
      return cb.neighbor_exchange_v2(x, {1, -1, -1, -1, -1, -1, -1, -1}, {1, 0, 0, 0},
                                     {-1, -1, -1, -1, 2, -1, -1, -1}, {0, 2, 0, 0});
    });
    const Node& n = b.g.node(b.dx);
    EXPECT_EQ(n.op, "NeighborExchangeV2Grad");
    EXPECT_EQ(n.attrs.get_ints("send_rank_ids"), (std::vector<int64_t>{-1, -1, -1, -1, 2, -1, -1, -1}));
    EXPECT_EQ(n.attrs.get_ints("send_lens"), (std::vector<int64_t>{0, 2, 0, 0}));
    EXPECT_EQ(n.attrs.get_ints("recv_lens"), (std::vector<int64_t>{1, 0, 0, 0}));
  }
}

TEST(CollectiveOps, SendAndReceiveGradientsTravelBack) {
  {  // the loss reaches a Send through its token: its gradient is a Receive from dest_rank
    Graph g;
    GraphBuilder gb(g);
    CollectiveBuilder cb(gb, kGroup);
    const Value x = gb.parameter("x", {2, 3});
    const Value token = cb.send(x, 5, 3);
    const int dx = gradients(g, token.id, {x.id})[0];
    const Node& n = g.node(dx);
    EXPECT_EQ(n.op, "Receive");
    EXPECT_EQ(n.attrs.get_int("src_rank"), 3);
    EXPECT_EQ(n.attrs.get_int("sr_tag"), 5);
    EXPECT_EQ(n.shape, (Shape{2, 3}));
  }
  {  // a Receive whose virtual input is differentiated sends dout back to src_rank
    Graph g;
    GraphBuilder gb(g);
    CollectiveBuilder cb(gb, kGroup);
    const Value p = gb.parameter("p", {2});
    const Value y = cb.receive(5, 1, {2, 3}, DType::kF32, p);
    const int dp = gradients(g, gb.reduce_sum(y).id, {p.id})[0];
    int sends = 0;
    for (const Node& n : g.nodes())
      if (n.op == "Send") {
        ++sends;
        EXPECT_EQ(n.attrs.get_int("dest_rank"), 1);
        EXPECT_EQ(g.node(n.inputs[0]).shape, (Shape{2, 3}));
      }
    EXPECT_EQ(sends, 1);
    EXPECT_EQ(g.node(dp).shape, (Shape{2}));
  }
}

TEST(CollectiveOps, OnlyReduceScatterSumHasAGradient) {
  Graph g;
  GraphBuilder gb(g);
  CollectiveBuilder cb(gb, kGroup);
  const Value x = gb.parameter("x", {8});
  const Value loss = gb.reduce_sum(cb.reduce_scatter(x, "max"));
  try {
    gradients(g, loss.id, {x.id});
    ADD_FAILURE() << "ReduceScatter max was differentiated";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("only ReduceScatter with op 'sum' has a gradient"), std::string::npos)
        << e.what();
  }
}

TEST(CollectiveOps, TheSequentialExecutorRefusesThem) {
  Graph g;
  GraphBuilder gb(g);
  CollectiveBuilder cb(gb, kGroup);
  const Value x = gb.parameter("x", {2});
  const Value y = cb.all_reduce(x);
  Executor ex(g, {y.id});
  ex.bind(x.id, floats({2}, {1, 2}));
  try {
    ex.run();
    ADD_FAILURE() << "the Executor ran an AllReduce";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("AllReduce 'AllReduce'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("actor runtime"), std::string::npos) << e.what();
  }
}

TEST(CollectiveOps, EqualAndRealDiv) {
  Graph g;
  GraphBuilder gb(g);
  const Value a = gb.parameter("a", {4}), b = gb.parameter("b", {4});
  const Value eq = gb.op("Equal", {a, b}), div = gb.op("RealDiv", {a, b});
  const auto got = optest::run_graph(g, {eq.id, div.id},
                                     {{a.id, floats({4}, {1, 2, 3, 4})}, {b.id, floats({4}, {1, 5, 3, -2})}});
  EXPECT_EQ(got[0].to_vector(), (std::vector<float>{1, 0, 1, 0}));
  EXPECT_EQ(got[1].to_vector(), (std::vector<float>{1, 0.4f, 1, -2}));
  EXPECT_TRUE(check_gradients(g, div.id, {{a.id, random_away_from_zero({4}, 1)}, {b.id, random_away_from_zero({4}, 2)}},
                              {a.id, b.id}));
}

}  // namespace
}  // namespace sf
