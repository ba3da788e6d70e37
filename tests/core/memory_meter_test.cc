// MemoryMeter and MemoryMeterScope: tensor storage allocated under a scope is charged to its
// meter and released when freed, wherever that happens; the peak is kept; scopes nest and are
// per thread.
#include <shardflow/core/memory_meter.h>

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include <shardflow/core/tensor.h>

namespace sf {
namespace {

TEST(MemoryMeter, ChargesAnAllocationAndReleasesItWhenFreed) {
  auto meter = std::make_shared<MemoryMeter>();
  {
    MemoryMeterScope scope(meter);
    Tensor t({10, 25});  // 1000 bytes
    Tensor view = t.view({250});
    Tensor copy = t;  // views and copies share the storage: charged once
    EXPECT_EQ(meter->live_bytes(), 1000u);
    EXPECT_EQ(meter->allocations(), 1);
    EXPECT_EQ(meter->frees(), 0);
  }
  EXPECT_EQ(meter->live_bytes(), 0u);
  EXPECT_EQ(meter->peak_bytes(), 1000u);
  EXPECT_EQ(meter->frees(), 1);
}

TEST(MemoryMeter, ChargesEveryWayOfMakingATensor) {
  auto meter = std::make_shared<MemoryMeter>();
  MemoryMeterScope scope(meter);
  Tensor a = Tensor::empty({4}, DType::kI32);
  Tensor b = Tensor::full({4}, 1.0f);
  Tensor c = Tensor::from_vector({2}, std::vector<float>{1, 2});
  Tensor d = b.clone();
  EXPECT_EQ(meter->live_bytes(), 16u + 16u + 8u + 16u);
  EXPECT_EQ(meter->allocations(), 4);
}

TEST(MemoryMeter, KeepsThePeakAfterFrees) {
  auto meter = std::make_shared<MemoryMeter>();
  MemoryMeterScope scope(meter);
  {
    Tensor a({256});  // 1 KiB
    Tensor b({512});  // 2 KiB
  }
  Tensor c({128});
  EXPECT_EQ(meter->live_bytes(), 512u);
  EXPECT_EQ(meter->peak_bytes(), 3072u);
  meter->reset_peak();
  EXPECT_EQ(meter->peak_bytes(), 512u);
}

TEST(MemoryMeter, AParentPeaksAtItsChildrensSumNotTheSumOfTheirPeaks) {
  auto region = std::make_shared<MemoryMeter>();
  auto a = std::make_shared<MemoryMeter>(region), b = std::make_shared<MemoryMeter>(region);
  auto leaf = std::make_shared<MemoryMeter>(a);  // two levels up to the region
  EXPECT_EQ(leaf->parent(), a);
  {
    MemoryMeterScope scope(a);
    Tensor t({25});  // 100 bytes, freed before b allocates
  }
  MemoryMeterScope scope(b);
  Tensor u({10});
  {
    MemoryMeterScope inner(leaf);
    Tensor v({5});
    EXPECT_EQ(a->live_bytes(), 20u);
  }
  EXPECT_EQ(a->peak_bytes(), 100u);
  EXPECT_EQ(b->peak_bytes(), 40u);
  EXPECT_EQ(region->peak_bytes(), 100u);  // 100 and 40 were never live together
  EXPECT_EQ(region->live_bytes(), 40u);
  EXPECT_EQ(region->allocations(), 3);
  EXPECT_EQ(region->frees(), 2);
}

TEST(MemoryMeter, NestedScopesChargeTheInnerMeterAndRestoreTheOuter) {
  auto outer = std::make_shared<MemoryMeter>(), inner = std::make_shared<MemoryMeter>();
  MemoryMeterScope a(outer);
  Tensor t1({1});
  {
    MemoryMeterScope b(inner);
    EXPECT_EQ(current_memory_meter(), inner);
    Tensor t2({2});
    {
      MemoryMeterScope none(nullptr);  // charged to nothing
      EXPECT_EQ(current_memory_meter(), nullptr);
      Tensor t3({100});
    }
    EXPECT_EQ(inner->live_bytes(), 8u);
  }
  EXPECT_EQ(current_memory_meter(), outer);
  Tensor t4({3});
  EXPECT_EQ(outer->live_bytes(), 16u);
  EXPECT_EQ(outer->allocations(), 2);
  EXPECT_EQ(inner->allocations(), 1);
}

TEST(MemoryMeter, NothingIsChargedWithoutAScope) {
  auto meter = std::make_shared<MemoryMeter>();
  { MemoryMeterScope scope(meter); }
  EXPECT_EQ(current_memory_meter(), nullptr);
  Tensor t({64});
  EXPECT_EQ(meter->allocations(), 0);
  EXPECT_EQ(meter->live_bytes(), 0u);
}

TEST(MemoryMeter, StorageOutlivingItsScopeAndItsOwnerIsReleasedFromTheMeter) {
  std::weak_ptr<MemoryMeter> watch;
  Tensor kept;
  {
    auto meter = std::make_shared<MemoryMeter>();
    watch = meter;
    MemoryMeterScope scope(meter);
    kept = Tensor({1000});
  }
  // The storage holds the meter: released from it, not from a dangling one, when it goes.
  std::shared_ptr<MemoryMeter> meter = watch.lock();
  ASSERT_NE(meter, nullptr);
  EXPECT_EQ(meter->live_bytes(), 4000u);
  Tensor other({5});  // no scope any more: not charged
  kept = Tensor();
  EXPECT_EQ(meter->live_bytes(), 0u);
  EXPECT_EQ(meter->peak_bytes(), 4000u);
  EXPECT_EQ(meter->allocations(), 1);
  meter.reset();
  EXPECT_TRUE(watch.expired());  // the last storage let the meter go
}

TEST(MemoryMeter, ScopesArePerThreadAndAMeterCountsFromManyThreads) {
  auto shared = std::make_shared<MemoryMeter>();
  auto main_only = std::make_shared<MemoryMeter>();
  MemoryMeterScope scope(main_only);
  constexpr int kThreads = 4, kTensors = 200;
  std::vector<Tensor> freed_elsewhere(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      EXPECT_EQ(current_memory_meter(), nullptr);  // the main thread's scope is not this thread's
      MemoryMeterScope mine(shared);
      for (int k = 0; k < kTensors; ++k) Tensor t({16});
      freed_elsewhere[i] = Tensor({8});
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(shared->allocations(), kThreads * (kTensors + 1));
  EXPECT_EQ(shared->live_bytes(), size_t{kThreads} * 32);
  EXPECT_GE(shared->peak_bytes(), size_t{kThreads} * 32);
  EXPECT_LE(shared->peak_bytes(), size_t{kThreads} * (64 + 32));
  freed_elsewhere.clear();  // released on this thread, from the meter that was charged
  EXPECT_EQ(shared->live_bytes(), 0u);
  EXPECT_EQ(main_only->allocations(), 0);
}

}  // namespace
}  // namespace sf
