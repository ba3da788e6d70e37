// NodeMeterScope: a Runtime built under it charges each chosen node's registers and its
// kernels' own allocations to the node's meter, and nothing of the other nodes.
#include <shardflow/actors/node_meters.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include <shardflow/actors/runtime.h>
#include <shardflow/ops/builder.h>
#include <shardflow/ops/op_def.h>

namespace sf {
namespace {

constexpr int64_t kScratchFloats = 1000;

// Copies its input, after allocating (and freeing) a scratch tensor as a kernel may.
void register_scratch_op() {
  if (OpRegistry::global().contains("TestScratch")) return;
  OpRegistry::global().add({.name = "TestScratch",
                            .arity = 1,
                            .infer = [](const Node&, const std::vector<const Node*>& in) {
                              return TypeInfo{in[0]->shape, in[0]->dtype};
                            },
                            .forward = [](const Node&, const std::vector<Tensor>& in, Tensor& out) {
                              Tensor scratch({kScratchFloats});
                              out.copy_from(in[0]);
                            },
                            .grad = {}});
}

// x(2) -> "region/a" -> "other/b": only "region/" nodes are metered.
struct Chain {
  Graph g;
  Value x, a, b;
  Chain() {
    register_scratch_op();
    GraphBuilder gb(g);
    x = gb.input("x", {2});
    a = gb.op("TestScratch", {x}, {}, "region/a");
    b = gb.op("TestScratch", {a}, {}, "other/b");
  }
};

TEST(NodeMeters, ChargesAChosenNodesRegistersAndKernelAllocations) {
  Chain c;
  auto meter = std::make_shared<MemoryMeter>();
  std::set<std::string> asked;
  constexpr int kSteps = 3;
  {
    const NodeMeterScope scope([&](const Node& n) {
      asked.insert(n.name);
      return n.name.starts_with("region/") ? meter : nullptr;
    });
    Runtime rt(c.g, {c.b.id}, {.threads = 2, .registers = 2});
    for (int s = 0; s < kSteps; ++s) rt.run({{c.x.id, Tensor::full({2}, 1.0f)}});
    // Two registers of 2 floats stay; each firing's scratch came and went.
    EXPECT_EQ(meter->live_bytes(), 2u * 8u);
    EXPECT_EQ(meter->peak_bytes(), 2u * 8u + kScratchFloats * 4);
    EXPECT_EQ(meter->allocations(), 2 + kSteps);
    EXPECT_EQ(meter->frees(), kSteps);
  }
  EXPECT_EQ(asked, (std::set<std::string>{"region/a", "other/b"}));
  EXPECT_EQ(meter->live_bytes(), 0u);  // the runtime's end freed the registers
  EXPECT_EQ(meter->frees(), 2 + kSteps);
}

TEST(NodeMeters, ARuntimeBuiltOutsideAScopeChargesNothing) {
  Chain c;
  auto meter = std::make_shared<MemoryMeter>();
  { const NodeMeterScope scope([&](const Node&) { return meter; }); }
  Runtime rt(c.g, {c.b.id}, {.threads = 1});
  rt.run({{c.x.id, Tensor::full({2}, 1.0f)}});
  EXPECT_EQ(meter->allocations(), 0);
}

}  // namespace
}  // namespace sf
