// init() with --devices N (comm/bootstrap/init.h, comm/rank_context.h): each virtual rank's
// code sees its own rank, collectives default to the world group, groups are created and
// destroyed by name, a failing rank releases its peers at once, and misuse is refused.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>

#include <shardflow/comm/bootstrap/init.h>
#include <shardflow/comm/comm.h>

namespace sf::comm {
namespace {

using namespace std::chrono_literals;

class Init : public ::testing::Test {
 protected:
  void init_devices(int n, std::vector<std::string> extra = {}) {
    std::vector<std::string> storage = {"prog", "--devices", std::to_string(n)};
    storage.insert(storage.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& s : storage) argv.push_back(s.data());
    argv.push_back(nullptr);
    int argc = static_cast<int>(storage.size());
    init(argc, argv.data());
    EXPECT_EQ(argc, 1);
  }
  void TearDown() override { release(); }
};

TEST_F(Init, EachVirtualRankSeesItsOwnRankAndTheWorld) {
  init_devices(4);
  EXPECT_EQ(job().size, 4);
  std::mutex mu;
  std::set<int> seen;
  std::vector<float> sums(4);
  run_ranks([&] {
    const int r = get_rank();
    EXPECT_EQ(get_group_size(), 4);
    EXPECT_EQ(get_local_rank(), r);
    {
      std::lock_guard<std::mutex> lock(mu);
      seen.insert(r);
    }
    // No group given: the world, as MindSpore's default.
    sums[r] = all_reduce(Tensor::full({3}, static_cast<float>(r + 1)), {}).data<float>()[0];
  });
  EXPECT_EQ(seen, (std::set<int>{0, 1, 2, 3}));
  for (float s : sums) EXPECT_EQ(s, 10.0f);
}

TEST_F(Init, DevicesCanTalkOverRealSockets) {
  init_devices(3, {"--backend", "zmq"});
  std::vector<float> sums(3);
  run_ranks([&] { sums[get_rank()] = all_reduce(Tensor::full({1}, 1.0f + get_rank()), {}).item(); });
  EXPECT_EQ(sums, (std::vector<float>{6, 6, 6}));
}

TEST_F(Init, GroupsAreCreatedUsedAndDestroyedByName) {
  init_devices(4);
  std::vector<float> got(4);
  run_ranks([&] {
    const int r = get_rank();
    const std::vector<int> mine = r % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{3, 1};
    const std::string name = r % 2 == 0 ? "even" : "odd";
    create_group(name, mine);
    EXPECT_EQ(get_group_size(name), 2);
    EXPECT_EQ(get_rank(name), r % 2 == 0 ? r / 2 : (r == 3 ? 0 : 1));
    EXPECT_EQ(get_world_rank_from_group_rank("odd" == name ? "odd" : "even", 0), mine[0]);
    EXPECT_EQ(get_group_rank_from_world_rank(r, name), get_rank(name));
    EXPECT_THROW(create_group(name, mine), InvalidArgument);  // the name is taken
    got[r] = all_reduce(Tensor::full({1}, static_cast<float>(r)), {.group = current_rank().group(name)}).item();
    destroy_group(name);
    EXPECT_THROW(get_rank(name), NotFound);
    EXPECT_THROW(destroy_group(name), NotFound);
    EXPECT_THROW(destroy_group("world"), InvalidArgument);
  });
  EXPECT_EQ(got, (std::vector<float>{2, 4, 2, 4}));
}

TEST_F(Init, ARankThatThrowsReleasesItsPeersAtOnce) {
  init_devices(3, {"--comm-timeout", "60"});
  const auto start = std::chrono::steady_clock::now();
  try {
    run_ranks([] {
      if (get_rank() == 1) throw std::runtime_error("rank 1 gave up");
      all_reduce(Tensor::full({10}, 1.0f), {});
    });
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    // The first error in time is rank 1's own; its peers fail naming it, well before 60 s.
    EXPECT_STREQ(e.what(), "rank 1 gave up");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST_F(Init, OptionsTakeTheTimeoutGivenToInit) {
  init_devices(2, {"--comm-timeout", "1.5"});
  EXPECT_EQ(AllReduceOptions{}.timeout, 1500ms);
  set_default_timeout(kDefaultTimeout);
}

TEST_F(Init, MisuseIsRefusedWithTheFix) {
  EXPECT_THROW(run_ranks([] {}), InvalidArgument);  // before init
  init_devices(2);
  try {
    get_rank();  // the main thread is no rank of a --devices job
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("run_ranks"), std::string::npos) << e.what();
  }
  try {
    all_reduce(Tensor::full({1}, 1.0f), {});
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("options.group is not set"), std::string::npos) << e.what();
  }
  try {
    init_devices(2);
    ADD_FAILURE() << "second init accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("already started a job"), std::string::npos) << e.what();
  }
}

TEST_F(Init, OneRankProcessBindsEveryThread) {
  init_devices(1);
  EXPECT_EQ(get_rank(), 0);  // no run_ranks needed
  EXPECT_EQ(get_group_size(), 1);
  std::thread t([] { EXPECT_EQ(all_reduce(Tensor::full({1}, 3.0f), {}).item(), 3.0f); });
  t.join();
}

}  // namespace
}  // namespace sf::comm
