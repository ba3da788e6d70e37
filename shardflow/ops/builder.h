/// @file
/// GraphBuilder: the typed front door for building a Graph from ops, one call per op.
///
/// Names are "<scope>/<Op>" (made unique with a counter), so that cells can prefix their
/// ops ("fc1/MatMul") and the IR dump reads like the network. Every call validates shapes
/// at once and throws an error naming the op.
#pragma once

#include <string>
#include <vector>

#include <shardflow/ops/graph.h>

namespace sf {

/// A value in the graph under construction: the output of one node.
struct Value {
  int id = -1;  ///< the node's id in the graph; -1 for no value
  /// False for a default-constructed Value.
  bool valid() const { return id >= 0; }
};

/// Builds a Graph one op at a time, checking shapes as each op is added.
class GraphBuilder {
 public:
  /// Adds to `g`, which must outlive the builder.
  explicit GraphBuilder(Graph& g) : g_(g) {}

  /// The graph being built.
  Graph& graph() { return g_; }
  /// The shape of `v`'s node.
  const Shape& shape(Value v) const { return g_.node(v.id).shape; }
  /// The element type of `v`'s node.
  DType dtype(Value v) const { return g_.node(v.id).dtype; }

  /// Scopes nest: push_scope("net"); push_scope("fc1") names ops "net/fc1/<Op>".
  void push_scope(const std::string& s) { scopes_.push_back(s); }
  /// Leaves the scope the last push_scope() entered.
  void pop_scope() { scopes_.pop_back(); }

  /// Any registered op; `name` overrides the generated one.
  Value op(const std::string& op, std::vector<Value> inputs, Attrs attrs = {}, const std::string& name = "");

  /// An Input node: a value fed at every step (Runtime::run's feeds).
  Value input(const std::string& name, const Shape& shape, DType dtype = DType::kF32);
  /// A Parameter node: an f32 tensor bound to the runtime across steps (Runtime::bind).
  Value parameter(const std::string& name, const Shape& shape);
  /// A constant f32 tensor of `shape` with every element `value`.
  Value fill(const Shape& shape, float value);

  /// The matrix product a x b, either transposed first.
  Value matmul(Value a, Value b, bool transpose_a = false, bool transpose_b = false);
  /// x plus a 1-D bias along dim 1 (the channels).
  Value bias_add(Value x, Value bias);
  /// Elementwise a + b (same shapes).
  Value add(Value a, Value b);
  /// Elementwise a - b (same shapes).
  Value sub(Value a, Value b);
  /// Elementwise a * b (same shapes).
  Value mul(Value a, Value b);
  /// max(x, 0) elementwise.
  Value relu(Value x);
  /// x as (N, everything else): dim 0 kept, the others flattened into one.
  Value flatten(Value x);
  /// x with a new shape of the same number of elements.
  Value reshape(Value x, const Shape& shape);
  /// Elements [begin[i], end[i]) of dim i, every strides[i]-th (1 if strides is empty); the
  /// dims past begin's size are kept whole.
  Value strided_slice(Value x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                      const std::vector<int64_t>& strides = {});
  /// xs joined along `axis`.
  Value concat(const std::vector<Value>& xs, int64_t axis = 0);
  /// The sum over `axis` (every dim if empty), the reduced dims kept as 1 if keep_dims.
  Value reduce_sum(Value x, const std::vector<int64_t>& axis = {}, bool keep_dims = false);
  /// The mean over `axis` (every dim if empty), the reduced dims kept as 1 if keep_dims.
  Value reduce_mean(Value x, const std::vector<int64_t>& axis = {}, bool keep_dims = false);
  /// NCHW convolution (ops/kernels/conv2d.cc): x (N,C,H,W), w (O,C,KH,KW), the same pad on
  /// every side.
  Value conv2d(Value x, Value w, int64_t stride = 1, int64_t pad = 0);
  /// Batch normalisation over dim 1 (ops/kernels/batch_norm.cc): with the batch's statistics
  /// when training, else with mean and var. It never updates mean and var: add
  /// batch_norm_update for that.
  Value batch_norm(Value x, Value gamma, Value beta, Value mean, Value var, bool training, float eps = 1e-5f,
                   float momentum = 0.9f);
  /// The two in-place BatchNormUpdateMoving nodes, {mean update, variance update}, that fold
  /// x's batch statistics into the moving mean and var (Parameters). Nothing may read them:
  /// a training program runs them because their op updates in place (OpDef::inplace_input).
  std::vector<Value> batch_norm_update(Value x, Value mean, Value var, float momentum = 0.9f);
  ///@{
  /// Square-window pooling (ops/kernels/pool.cc); AvgPool divides by kernel^2, padding included.
  Value max_pool(Value x, int64_t kernel, int64_t stride, int64_t pad = 0);
  Value avg_pool(Value x, int64_t kernel, int64_t stride, int64_t pad = 0);
  ///@}
  /// (N,C,H,W) -> (N,C): the mean over H and W (ReduceMean over axes 2 and 3).
  Value global_avg_pool(Value x);
  /// GeLU (ops/kernels/gelu.cc); `approximate` is "tanh" (the tanh formula) or "none" (exact, erf).
  Value gelu(Value x, const std::string& approximate = "tanh");
  /// Layer normalisation of each row of x's dims begin_norm_axis.. (ops/kernels/layer_norm.cc),
  /// scaled by gamma and shifted by beta, both shaped as x's dims begin_params_axis...
  Value layer_norm(Value x, Value gamma, Value beta, int64_t begin_norm_axis = -1, int64_t begin_params_axis = -1,
                   float epsilon = 1e-5f);
  /// exp(x) normalised to sum 1 along `axis` (ops/kernels/softmax.cc).
  Value softmax(Value x, int64_t axis = -1);
  /// x with its dims reordered: output dim i is x's dim perm[i] (ops/kernels/transpose.cc).
  Value transpose(Value x, const std::vector<int64_t>& perm);
  /// One matrix product per index of the leading dims: (..., m, k) x (..., k, n) -> (..., m, n),
  /// either operand's last two dims transposed first (ops/kernels/batch_matmul.cc).
  Value batch_matmul(Value a, Value b, bool transpose_a = false, bool transpose_b = false);
  /// A dense layer's product on activations of any rank: x (..., k) times w^T for a weight
  /// stored (n, k) (transpose_b) or w for one stored (k, n) (ops/kernels/linear.cc).
  Value linear(Value x, Value w, bool transpose_b = true);
  /// Row ids[p] of table (R, h) for every position p of the i32 ids: shape ids.shape + (h)
  /// (ops/kernels/embedding.cc).
  Value embedding(Value table, Value ids);
  /// x with each element zeroed with probability p and the others scaled by 1 / (1 - p); the
  /// i32 seeds hold one seed per slice of x along batch_axis, and the mask depends only on a
  /// sample's seed, this site (a salt hashed from the node's name) and the element's position
  /// (ops/kernels/dropout.cc).
  Value dropout(Value x, Value seeds, float p, int64_t batch_axis = 0);
  /// Attention scores (..., q, k) with every key after its query set to a large negative, so
  /// that a softmax after it gives those keys weight 0 (ops/kernels/dropout.cc).
  Value causal_mask(Value scores);
  /// Mean over the batch of -log softmax(logits)[label]; labels are i32 class ids. Only the
  /// first `classes` columns are classes (-1: all); the rest pad the vocabulary and are ignored.
  Value softmax_cross_entropy(Value logits, Value labels, int64_t classes = -1);
  /// Mean of (pred - target)^2 over all elements.
  Value mse_loss(Value pred, Value target);

 private:
  std::string next_name(const std::string& op);

  Graph& g_;
  std::vector<std::string> scopes_;
};

}  // namespace sf
