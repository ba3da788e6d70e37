// Test support for the strategy searches: a network and its loss built on global shapes as
// SemiAutoStep builds them (inputs "input0", "input1"), so a search can be run on the graph a
// training step would shard, and the node name a primitive gave its op.
#pragma once

#include <memory>
#include <string>

#include <shardflow/ops/builder.h>
#include "semi_auto_world.h"

namespace sf::paralleltest {

struct GlobalGraph {
  Graph g;
  int loss = -1;
};

// `net` and its loss on one batch of `kind`'s data.
inline std::unique_ptr<GlobalGraph> global_graph(nn::Cell& net, NetKind kind) {
  auto gg = std::make_unique<GlobalGraph>();
  GraphBuilder b(gg->g);
  const dataset::Dataset data = data_for(kind);
  std::vector<Value> columns;
  for (int c = 0; c < 2; ++c) {
    Shape shape = data.column(c).shape();
    shape[0] = kBatch;
    columns.push_back(b.input("input" + std::to_string(c), shape, data.column(c).dtype()));
  }
  const Value x = columns[0], y = columns[1];
  gg->loss = (*loss_for(kind))(b, net(b, x), y).id;
  return gg;
}

// The node `p` added (it must have added one).
inline std::string node_of(const Primitive& p) { return *p.node_names().begin(); }

}  // namespace sf::paralleltest
