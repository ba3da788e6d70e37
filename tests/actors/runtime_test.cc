#include <shardflow/actors/runtime.h>

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include <shardflow/core/rng.h>
#include <shardflow/ops/builder.h>
#include <shardflow/ops/executor.h>
#include <shardflow/ops/op_def.h>

namespace sf {
namespace {

Tensor random_tensor(const Shape& s, uint64_t stream) {
  Tensor t(s);
  fill_random(t, Distribution::kNormal, 0.0f, 1.0f, 7, stream);
  return t;
}

// x(4,3) -> MatMul w(5,3)^T -> two branches that rejoin: a diamond the actors run concurrently.
struct Diamond {
  Graph g;
  Value x, w, a, b, out;
  Diamond() {
    GraphBuilder b_(g);
    x = b_.input("x", {4, 3});
    w = b_.parameter("w", {5, 3});
    Value h = b_.matmul(x, w, false, true);
    a = b_.matmul(h, h, true, false);   // (5,5)
    b = b_.matmul(h, h, true, false);   // same again, independent actor
    out = b_.op("MatMul", {a, b});
  }
};

TEST(Runtime, MatchesTheSequentialExecutorBitwise) {
  Diamond d;
  Tensor x = random_tensor({4, 3}, 1), w = random_tensor({5, 3}, 2);
  Executor ex(d.g, {d.out.id, d.a.id});
  ex.bind(d.x.id, x);
  ex.bind(d.w.id, w);
  auto want = ex.run();
  for (int threads : {1, 2, 4}) {
    Runtime rt(d.g, {d.out.id, d.a.id}, {.threads = threads});
    rt.bind(d.w.id, w);
    for (int step = 0; step < 5; ++step) {
      const auto& got = rt.run({{d.x.id, x}});
      ASSERT_EQ(got.size(), 2u);
      EXPECT_TRUE(bitwise_equal(got[0], want[0])) << "threads " << threads << " step " << step;
      EXPECT_TRUE(bitwise_equal(got[1], want[1]));
    }
    EXPECT_EQ(rt.actor_count(), 4);
  }
}

TEST(Runtime, SeesParameterUpdatesBetweenSteps) {
  Diamond d;
  Tensor x = random_tensor({4, 3}, 1), w = random_tensor({5, 3}, 2);
  Runtime rt(d.g, {d.out.id});
  rt.bind(d.w.id, w);
  Tensor first = rt.run({{d.x.id, x}})[0].clone();
  w.fill(0.5f);
  Tensor second = rt.run({{d.x.id, x}})[0].clone();
  Executor ex(d.g, {d.out.id});
  ex.bind(d.x.id, x);
  ex.bind(d.w.id, w);
  EXPECT_FALSE(bitwise_equal(first, second));
  EXPECT_TRUE(bitwise_equal(second, ex.run()[0]));
}

TEST(Runtime, RefusesBadFeedsBeforeRunning) {
  Diamond d;
  Runtime rt(d.g, {d.out.id});
  rt.bind(d.w.id, random_tensor({5, 3}, 2));
  EXPECT_THROW(rt.run({}), InvalidArgument);  // x not fed
  try {
    rt.run({{d.x.id, Tensor({4, 3}, DType::kI32)}});
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("Input 'x'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("i32"), std::string::npos) << e.what();
  }
  // Still usable after a refused feed.
  EXPECT_NO_THROW(rt.run({{d.x.id, random_tensor({4, 3}, 1)}}));
}

TEST(Runtime, AnOpExceptionReachesTheCallerNamingTheOp) {
  if (!OpRegistry::global().contains("TestExplode"))
    OpRegistry::global().add({.name = "TestExplode",
                              .arity = 1,
                              .infer = [](const Node&, const std::vector<const Node*>& in) {
                                return TypeInfo{in[0]->shape, in[0]->dtype};
                              },
                              .forward = [](const Node&, const std::vector<Tensor>&, Tensor&) {
                                throw std::runtime_error("boom");
                              },
                              .grad = {}});
  Graph g;
  GraphBuilder b(g);
  Value x = b.input("x", {2});
  Value y = b.op("TestExplode", {x}, {}, "bad/op");
  Runtime rt(g, {y.id}, {.threads = 2});
  try {
    rt.run({{x.id, Tensor({2})}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "TestExplode 'bad/op': boom");
  }
  EXPECT_THROW(rt.run({{x.id, Tensor({2})}}), Error);
}

TEST(Runtime, WritesAChromeTraceWithOneEventPerFiring) {
  Diamond d;
  Runtime rt(d.g, {d.out.id}, {.threads = 2, .registers = 2, .trace = true});
  rt.bind(d.w.id, random_tensor({5, 3}, 2));
  for (int i = 0; i < 3; ++i) rt.run({{d.x.id, random_tensor({4, 3}, 1)}});
  std::string path = ::testing::TempDir() + "/runtime_trace_" + std::to_string(::getpid()) + ".json";
  rt.write_trace(path);
  std::ifstream f(path);
  auto j = nlohmann::json::parse(f);
  int complete = 0;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_TRUE(e["args"].contains("step"));
    }
  EXPECT_EQ(complete, 3 * 4);
}

}  // namespace
}  // namespace sf

namespace sf {
namespace {

TEST(Runtime, RunStepsLoopsMayFollowEachOtherAndPlainRuns) {
  Diamond d;
  Tensor x = random_tensor({4, 3}, 1), w = random_tensor({5, 3}, 2);
  Executor ex(d.g, {d.out.id});
  ex.bind(d.x.id, x);
  ex.bind(d.w.id, w);
  Tensor want = ex.run()[0].clone();
  Runtime rt(d.g, {d.out.id}, {.threads = 2, .registers = 1});
  rt.bind(d.w.id, w);
  for (int loop = 0; loop < 3; ++loop) {
    int steps = 0, checked = 0;
    rt.run_steps(
        [&](Runtime::Feeds& feeds) {
          if (steps == 4) return false;
          ++steps;
          feeds = {{d.x.id, x}};
          return true;
        },
        [&](const std::vector<Tensor>& out) { checked += bitwise_equal(out[0], want); });
    EXPECT_EQ(checked, 4) << "loop " << loop;
    EXPECT_TRUE(bitwise_equal(rt.run({{d.x.id, x}})[0], want));
  }
}

TEST(Runtime, AnExceptionInsideTheStepLoopReachesTheCaller) {
  Diamond d;
  Runtime rt(d.g, {d.out.id});
  rt.bind(d.w.id, random_tensor({5, 3}, 2));
  int steps = 0;
  EXPECT_THROW(rt.run_steps(
                   [&](Runtime::Feeds& feeds) {
                     feeds = {{d.x.id, random_tensor({4, 3}, 1)}};
                     return steps++ < 10;
                   },
                   [&](const std::vector<Tensor>&) {
                     if (steps == 3) throw InvalidArgument("callback refused");
                   }),
               Error);
  EXPECT_EQ(steps, 3);
}

}  // namespace
}  // namespace sf

namespace sf {
namespace {

// Destroying a runtime right after its last step must wait for actors still finishing the
// firing that delivered the result (they use the runtime's shared state).
TEST(Runtime, CanBeDestroyedRightAfterAStep) {
  Diamond d;
  Tensor x = random_tensor({4, 3}, 1), w = random_tensor({5, 3}, 2);
  for (int i = 0; i < 50; ++i) {
    Runtime rt(d.g, {d.a.id, d.out.id}, {.threads = 2});
    rt.bind(d.w.id, w);
    ASSERT_EQ(rt.run({{d.x.id, x}}).size(), 2u);
  }
}

}  // namespace
}  // namespace sf
