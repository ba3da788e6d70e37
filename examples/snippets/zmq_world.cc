// docs/zmq_transport.md's two ways to make zmq endpoints: n ranks in this process, and one
// rank of a multi-process job from sfrun's environment, then an AllReduce on the job's world
// group. Run under sfrun; fails unless the sum of every rank's ones is the number of ranks.
#include <chrono>
#include <iostream>

#include <shardflow/comm/zmq/transport.h>
#include <shardflow/shardflow.h>

using namespace std::chrono_literals;
using sf::Tensor;

int main() try {
  const Tensor x = Tensor::from_vector({4}, std::vector<float>(4, 1.0f));
  // [zmq]
  // n ranks in this process, on real sockets (tests, single-host runs):
  auto world = sf::comm::make_zmq_world(4, {.scheme = sf::comm::ZmqScheme::kTcp});
  // one rank of a multi-process job (every rank calls it with the same size, rendezvous, secret):
  auto me = sf::comm::make_zmq_world(sf::comm::zmq_join_from_env());  // SF_RANK, SF_WORLD_SIZE,
                                                                        // SF_RENDEZVOUS, SF_JOB_SECRET
  sf::comm::Group g = sf::comm::world_group(me);
  Tensor sum = sf::comm::all_reduce(x, {.group = g, .timeout = 30s});
  // [zmq]
  const float expected = static_cast<float>(me->size());
  std::cout << "rank " << me->rank() << ": sum " << sum.f32()[0] << " of " << expected << ", " << world.size()
            << " in-process ranks" << std::endl;
  return sum.f32()[0] == expected && world.size() == 4 ? 0 : 1;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
