// docs/mpi_transport.md's use of the mpi transport: this process's endpoint of an Open MPI
// job, its world group, an AllReduce on it. Run under mpirun; fails unless the sum of every
// rank's ones is the number of ranks.
#include <chrono>
#include <iostream>

#include <shardflow/comm/mpi/transport.h>
#include <shardflow/shardflow.h>

using namespace std::chrono_literals;
using sf::Tensor;

int main() try {
  const Tensor x = Tensor::from_vector({4}, std::vector<float>(4, 1.0f));
  // [mpi]
  auto world = sf::comm::make_mpi_world();   // collective: every rank calls it
  sf::comm::Group g = sf::comm::world_group(world);
  Tensor sum = sf::comm::all_reduce(x, {.group = g, .timeout = 30s});
  // [mpi]
  const float expected = static_cast<float>(world->size());
  std::cout << "rank " << world->rank() << ": sum " << sum.f32()[0] << " of " << expected << std::endl;
  return sum.f32()[0] == expected && sum.f32()[3] == expected ? 0 : 1;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
