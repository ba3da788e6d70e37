// GraphBuilder: the typed front door for building a Graph from ops, one call per op.
//
// Names are "<scope>/<Op>" (made unique with a counter), so that cells can prefix their
// ops ("fc1/MatMul") and the IR dump reads like the network. Every call validates shapes
// at once and throws an error naming the op.
#pragma once

#include <string>
#include <vector>

#include <shardflow/ops/graph.h>

namespace sf {

// A value in the graph under construction: the output of one node.
struct Value {
  int id = -1;
  bool valid() const { return id >= 0; }
};

class GraphBuilder {
 public:
  explicit GraphBuilder(Graph& g) : g_(g) {}

  Graph& graph() { return g_; }
  const Shape& shape(Value v) const { return g_.node(v.id).shape; }
  DType dtype(Value v) const { return g_.node(v.id).dtype; }

  // Scopes nest: push_scope("net"); push_scope("fc1") names ops "net/fc1/<Op>".
  void push_scope(const std::string& s) { scopes_.push_back(s); }
  void pop_scope() { scopes_.pop_back(); }

  // Any registered op; `name` overrides the generated one.
  Value op(const std::string& op, std::vector<Value> inputs, Attrs attrs = {}, const std::string& name = "");

  Value input(const std::string& name, const Shape& shape, DType dtype = DType::kF32);
  Value parameter(const std::string& name, const Shape& shape);
  Value fill(const Shape& shape, float value);

  Value matmul(Value a, Value b, bool transpose_a = false, bool transpose_b = false);
  Value bias_add(Value x, Value bias);
  Value add(Value a, Value b);
  Value sub(Value a, Value b);
  Value mul(Value a, Value b);
  Value relu(Value x);
  Value flatten(Value x);
  Value reshape(Value x, const Shape& shape);
  Value strided_slice(Value x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                      const std::vector<int64_t>& strides = {});
  Value concat(const std::vector<Value>& xs, int64_t axis = 0);
  Value reduce_sum(Value x, const std::vector<int64_t>& axis = {}, bool keep_dims = false);
  Value reduce_mean(Value x, const std::vector<int64_t>& axis = {}, bool keep_dims = false);
  // NCHW convolution (ops/kernels/conv2d.cc): x (N,C,H,W), w (O,C,KH,KW), the same pad on
  // every side.
  Value conv2d(Value x, Value w, int64_t stride = 1, int64_t pad = 0);
  // Batch normalisation over dim 1 (ops/kernels/batch_norm.cc): with the batch's statistics
  // when training, else with mean and var. It never updates mean and var: add
  // batch_norm_update for that.
  Value batch_norm(Value x, Value gamma, Value beta, Value mean, Value var, bool training, float eps = 1e-5f,
                   float momentum = 0.9f);
  // The two in-place BatchNormUpdateMoving nodes, {mean update, variance update}, that fold
  // x's batch statistics into the moving mean and var (Parameters). Nothing may read them:
  // a training program runs them because their op updates in place (OpDef::inplace_input).
  std::vector<Value> batch_norm_update(Value x, Value mean, Value var, float momentum = 0.9f);
  // Square-window pooling (ops/kernels/pool.cc); AvgPool divides by kernel^2, padding included.
  Value max_pool(Value x, int64_t kernel, int64_t stride, int64_t pad = 0);
  Value avg_pool(Value x, int64_t kernel, int64_t stride, int64_t pad = 0);
  // (N,C,H,W) -> (N,C): the mean over H and W (ReduceMean over axes 2 and 3).
  Value global_avg_pool(Value x);
  // Mean over the batch of -log softmax(logits)[label]; labels are i32 class ids.
  Value softmax_cross_entropy(Value logits, Value labels);
  // Mean of (pred - target)^2 over all elements.
  Value mse_loss(Value pred, Value target);

 private:
  std::string next_name(const std::string& op);

  Graph& g_;
  std::vector<std::string> scopes_;
};

}  // namespace sf
