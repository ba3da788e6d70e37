// A sharding rule: what parallel/ must know about one op to run it split over devices.
//
// Every op with a rule is described as a loop nest (an einsum): each dim of each input and of
// the output is one of the op's loops. MatMul (m,k) x (k,n) -> (m,n) has loops m, k, n; an
// element-wise op has one loop per output dim (a broadcast input dim of size 1 belongs to
// none). From the nest, op_sharding.h derives everything generically: a tuple strategy gives
// each loop its number of blocks and the op's device matrix (MatMul ((a,b),(b,c)) -> (a,b,c)),
// a layout strategy gives each loop its device axes, two inputs that disagree on a loop are
// refused, and a loop absent from the output (MatMul's k, a reduction's axes) that is split
// leaves the output *partial* over its axes. Loops marked `whole` are ones the local kernel
// must see entire (Softmax's axis, a reshaped dim): a split the strategy
// asks for there is gathered by redistribution before the op instead. Loops marked `local` are
// reductions whose split leaves each rank the result over its own block rather than a share of
// a sum (BatchNormUpdateMoving's batch: each rank's moving statistics from its own rows, as in
// data parallel), or whose lowering reduces across ranks itself (SoftmaxCrossEntropy's classes:
// the row max and sums AllReduced over the class shards): the output is not partial over them.
//
// The rules live here rather than next to the kernels in ops/ (as DESIGN.md first placed
// them) because a rule speaks in layouts and device matrices, and ops/ must not include
// parallel/ headers. docs/operator_parallel.md says so too.
//
// Threading: the table is built once, immutable after.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <shardflow/ops/builder.h>
#include <shardflow/ops/collective_attrs.h>
#include <shardflow/parallel/tensor_layout.h>

namespace sf {

struct LoopNest {
  static constexpr int kBroadcast = -1;  // an input dim of size 1 broadcast over an output loop

  std::vector<std::string> loops;        // loop names, for messages ("k (reduce)")
  std::vector<std::vector<int>> inputs;  // [input][dim]: its loop, or kBroadcast
  std::vector<int> output;               // [dim]: its loop
  std::vector<bool> whole;               // per loop: the kernel needs it unsplit
  std::vector<bool> local;               // per loop, or empty for none: a split reduction stays per rank
  bool mean = false;                     // the op averages over the loops it reduces
};

// What a rule's lowering knows of the rank it lowers for. Most ops compute the same thing on
// any block; the ones that do not (an embedding whose vocabulary is split looks up only its
// own rows, a dropout mask or a causal mask follows global positions) read where this rank's
// blocks start, and the few that reduce across ranks inside the op (a cross-entropy over a
// split class dim) name the group of ranks that split a dim.
struct LowerContext {
  const Node& node;                                // the global op
  Shape local_out;                                 // the local op's output shape
  std::vector<Value> in;                           // the local inputs, in the layouts the op asked for
  std::vector<std::vector<DimSlice>> in_slices;    // [input][dim]: the block of it this rank holds
  std::vector<DimSlice> out_slice;                 // [dim]: the block of the output it computes
  std::vector<Shape> in_shapes;                    // [input]: its global shape (a dim split iff wider than its slice)
  // The group of the ranks through this one that hold the other blocks of input `input`'s dim
  // `dim` (the collective's group name and size; registered with the local graph).
  std::function<GroupRef(int input, int dim)> group_along;
};

struct ShardingRule {
  // The loop nest of `node` for inputs of these (global) shapes.
  LoopNest (*nest)(const Node& node, const std::vector<Shape>& inputs);
  // This rank's op (or ops) on its local inputs; null: the node's op with its attributes
  // unchanged (right for every op whose attributes name no sizes or positions).
  Value (*lower)(GraphBuilder& b, const LowerContext& ctx) = nullptr;
};

// The rule of op `op`, or null if it has none.
const ShardingRule* find_sharding_rule(const std::string& op);
// The ops that have one, sorted (for error messages).
std::vector<std::string> ops_with_sharding_rules();

// The rules, one file each.
extern const ShardingRule kMatMulRule;
extern const ShardingRule kElementwiseRule;  // Add, Sub, Mul, RealDiv, Equal, ReLU, ReluGrad, GeLU, GeLUGrad
extern const ShardingRule kBiasAddRule;
extern const ShardingRule kReduceRule;  // ReduceSum, ReduceMean
extern const ShardingRule kSoftmaxCrossEntropyRule;
extern const ShardingRule kMseLossRule;
extern const ShardingRule kReshapeRule;  // Reshape, Flatten
extern const ShardingRule kConv2dRule;
extern const ShardingRule kBatchNormRule;
extern const ShardingRule kBatchNormUpdateMovingRule;
extern const ShardingRule kPoolRule;  // MaxPool, AvgPool
extern const ShardingRule kLayerNormRule;  // LayerNorm, LayerNormGrad
extern const ShardingRule kLayerNormGammaGradRule;
extern const ShardingRule kSoftmaxRule;  // Softmax, SoftmaxGrad
extern const ShardingRule kTransposeRule;
extern const ShardingRule kBatchMatMulRule;
extern const ShardingRule kLinearRule;
extern const ShardingRule kLinearGradWeightRule;
extern const ShardingRule kStridedSliceRule;
extern const ShardingRule kDropoutRule;     // Dropout
extern const ShardingRule kCausalMaskRule;  // CausalMask
extern const ShardingRule kEmbeddingRule;      // EmbeddingLookup
extern const ShardingRule kEmbeddingGradRule;  // EmbeddingLookupGrad

}  // namespace sf
