/// @file
/// MaxPool and AvgPool's sharding rule: x (N, C, H, W) pooled into (N, C, OH, OW), each plane
/// (n, c) on its own. Loops n (batch), c (channels), h, w: a split of the batch or the channels
/// is local to each rank, ((2,4,1,1)) on 8 devices. A window reads neighbouring pixels, so h and
/// w are whole loops (no halo exchange): a strategy that splits them gets them gathered before
/// the op. OH and OW run over the whole loops h and w, so their sizes need not agree with H, W.
/// The attributes (kernel, stride, pad) name no tensor sizes, so the local op keeps them.
#include <shardflow/parallel/sharding/sharding_rule.h>

namespace sf {

namespace {
LoopNest pool_nest(const Node&, const std::vector<Shape>&) {
  LoopNest nest;
  nest.loops = {"n (batch)", "c (channels)", "h", "w"};
  nest.inputs = {{0, 1, 2, 3}};
  nest.output = {0, 1, 2, 3};
  nest.whole = {false, false, true, true};
  return nest;
}
}  // namespace

const ShardingRule kPoolRule{pool_nest};

}  // namespace sf
