// What the runtime needs to know about one op: shape inference, forward kernel and gradient
// rule. Ops are registered by name in OpRegistry (ops/registry.cc lists the built-in ones).
//
// Kernel contract: forward(node, inputs, out) writes every element of `out`, which the
// caller has allocated with the inferred shape and dtype and which may hold stale data.
// Kernels are pure (no state between calls) and may run concurrently on different nodes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/core/tensor.h>
#include <shardflow/ops/graph.h>

namespace sf {

struct TypeInfo {
  Shape shape;
  DType dtype = DType::kF32;
};

// Emits backward nodes for one forward node into the graph being differentiated.
class GradContext {
 public:
  GradContext(Graph& g, const Node& fwd, std::vector<bool> wanted) : g_(g), fwd_(fwd), wanted_(std::move(wanted)) {}
  // Adds a node named "Gradients/<fwd name>/<op>-<k>".
  int emit(const std::string& op, std::vector<int> inputs, Attrs attrs = {});
  const Node& node(int id) const { return g_.node(id); }
  // True if the gradient of input i is needed; a rule may return -1 for the others.
  bool wants(int i) const { return wanted_[i]; }

 private:
  Graph& g_;
  const Node& fwd_;
  std::vector<bool> wanted_;
  int count_ = 0;
};

using InferFn = std::function<TypeInfo(const Node& node, const std::vector<const Node*>& inputs)>;
using ForwardFn = std::function<void(const Node& node, const std::vector<Tensor>& inputs, Tensor& out)>;
// Returns one node id per input: the gradient of the loss w.r.t. that input, or -1 for none.
using GradFn = std::function<std::vector<int>(GradContext& ctx, const Node& fwd, int dout)>;

struct OpDef {
  std::string name;
  int arity = 1;  // number of inputs; -1 = any number >= 1
  InferFn infer;
  ForwardFn forward;  // empty for source ops (Input, Parameter), whose value is bound by the runtime
  GradFn grad;        // empty = not differentiable
  // >= 0: the op updates input `inplace_input` in place and that tensor is its output (an
  // optimizer step writing a Parameter); executors pass it as `out` instead of a buffer.
  int inplace_input = -1;
  bool is_source() const { return !forward; }
};

class OpRegistry {
 public:
  // The process-wide registry, holding the built-in ops.
  static OpRegistry& global();
  void add(OpDef def);
  // Throws NotFound naming the op.
  const OpDef& find(const std::string& name) const;
  bool contains(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<OpDef>> defs_;
};

}  // namespace sf
