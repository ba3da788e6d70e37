/// @file
/// Conv2D's sharding rule: x (N, C, H, W) convolved with w (O, C, KH, KW) into (N, O, OH, OW).
/// Loops n (batch), c (input channels, reduced), h, w (image), o (output channels), kh, kw
/// (kernel taps, reduced), in that order, so that MindSpore's strategy ((n, c, h, w), (o, c, kh,
/// kw)) gives device matrix (n, c, h, w, o, kh, kw):
///   - ((1,1,1,1), (4,1,1,1)) splits the output channels (column parallel): each rank convolves the
///     whole input with its block of filters, and the output is split on dim 1;
///   - ((1,4,1,1), (1,4,1,1)) splits the input channels (row parallel): each rank sums its block
///     of channels, a partial output that AllReduce (or, with an out_strategy, ReduceScatter)
///     resolves;
///   - a split of n is data parallel.
/// An output pixel reads a window of input pixels, so a block of rows would need its
/// neighbours' edge rows (a halo exchange, which this runtime does not do): h, w, kh and kw are
/// whole loops, and a strategy that splits them gets them gathered before the op. The output's
/// OH, OW run over the image loops h, w too: being whole they are never split, so their sizes
/// need not agree with H, W.
///
/// The local op keeps its attributes: stride and pad name no sizes, and the gradients autodiff
/// adds to the local graph take their sizes from the local shapes.
#include <shardflow/parallel/sharding/sharding_rule.h>

namespace sf {

namespace {
constexpr int kN = 0, kC = 1, kH = 2, kW = 3, kO = 4, kKh = 5, kKw = 6;

LoopNest conv2d_nest(const Node&, const std::vector<Shape>&) {
  LoopNest nest;
  nest.loops = {"n (batch)", "c (in channels, reduce)", "h", "w", "o (out channels)", "kh (reduce)", "kw (reduce)"};
  nest.inputs = {{kN, kC, kH, kW}, {kO, kC, kKh, kKw}};
  nest.output = {kN, kO, kH, kW};
  nest.whole = {false, false, true, true, false, true, true};
  return nest;
}
}  // namespace

const ShardingRule kConv2dRule{conv2d_nest};

}  // namespace sf
