#include <shardflow/ops/builder.h>

#include <fmt/format.h>

#include <shardflow/core/rng.h>

namespace sf {

std::string GraphBuilder::next_name(const std::string& op) {
  std::string prefix;
  for (const auto& s : scopes_) prefix += s + "/";
  std::string name = prefix + op;
  for (int k = 1; g_.find(name) >= 0; ++k) name = fmt::format("{}{}-{}", prefix, op, k);
  return name;
}

Value GraphBuilder::op(const std::string& op, std::vector<Value> inputs, Attrs attrs, const std::string& name) {
  std::vector<int> ids;
  for (Value v : inputs) ids.push_back(v.id);
  return {g_.add(op, std::move(ids), std::move(attrs), name.empty() ? next_name(op) : name)};
}

Value GraphBuilder::input(const std::string& name, const Shape& shape, DType dtype) {
  return op("Input", {}, {{"shape", shape}, {"dtype", std::string(dtype_name(dtype))}}, name);
}

Value GraphBuilder::parameter(const std::string& name, const Shape& shape) {
  return op("Parameter", {}, {{"shape", shape}}, name);
}

Value GraphBuilder::fill(const Shape& shape, float value) {
  return op("Fill", {}, {{"shape", shape}, {"value", double{value}}});
}

Value GraphBuilder::matmul(Value a, Value b, bool ta, bool tb) {
  return op("MatMul", {a, b}, {{"transpose_a", int64_t{ta}}, {"transpose_b", int64_t{tb}}});
}
Value GraphBuilder::bias_add(Value x, Value bias) { return op("BiasAdd", {x, bias}); }
Value GraphBuilder::add(Value a, Value b) { return op("Add", {a, b}); }
Value GraphBuilder::sub(Value a, Value b) { return op("Sub", {a, b}); }
Value GraphBuilder::mul(Value a, Value b) { return op("Mul", {a, b}); }
Value GraphBuilder::relu(Value x) { return op("ReLU", {x}); }
Value GraphBuilder::flatten(Value x) { return op("Flatten", {x}); }
Value GraphBuilder::reshape(Value x, const Shape& shape) { return op("Reshape", {x}, {{"shape", shape}}); }

Value GraphBuilder::strided_slice(Value x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                                  const std::vector<int64_t>& strides) {
  Attrs a{{"begin", begin}, {"end", end}};
  if (!strides.empty()) a.set("strides", strides);
  return op("StridedSlice", {x}, std::move(a));
}

Value GraphBuilder::concat(const std::vector<Value>& xs, int64_t axis) { return op("Concat", xs, {{"axis", axis}}); }

Value GraphBuilder::reduce_sum(Value x, const std::vector<int64_t>& axis, bool keep_dims) {
  return op("ReduceSum", {x}, {{"axis", axis}, {"keep_dims", int64_t{keep_dims}}});
}

Value GraphBuilder::reduce_mean(Value x, const std::vector<int64_t>& axis, bool keep_dims) {
  return op("ReduceMean", {x}, {{"axis", axis}, {"keep_dims", int64_t{keep_dims}}});
}

Value GraphBuilder::conv2d(Value x, Value w, int64_t stride, int64_t pad) {
  return op("Conv2D", {x, w}, {{"stride", stride}, {"pad", pad}});
}

Value GraphBuilder::batch_norm(Value x, Value gamma, Value beta, Value mean, Value var, bool training, float eps,
                               float momentum) {
  return op("BatchNorm", {x, gamma, beta, mean, var},
            {{"training", int64_t{training}}, {"epsilon", double{eps}}, {"momentum", double{momentum}}});
}

std::vector<Value> GraphBuilder::batch_norm_update(Value x, Value mean, Value var, float momentum) {
  auto update = [&](Value moving, const char* which) {
    return op("BatchNormUpdateMoving", {moving, x}, {{"which", std::string(which)}, {"momentum", double{momentum}}});
  };
  return {update(mean, "mean"), update(var, "variance")};
}

Value GraphBuilder::max_pool(Value x, int64_t kernel, int64_t stride, int64_t pad) {
  return op("MaxPool", {x}, {{"kernel", kernel}, {"stride", stride}, {"pad", pad}});
}

Value GraphBuilder::avg_pool(Value x, int64_t kernel, int64_t stride, int64_t pad) {
  return op("AvgPool", {x}, {{"kernel", kernel}, {"stride", stride}, {"pad", pad}});
}

Value GraphBuilder::global_avg_pool(Value x) { return reduce_mean(x, {2, 3}, false); }

Value GraphBuilder::gelu(Value x, const std::string& approximate) {
  return op("GeLU", {x}, {{"approximate", approximate}});
}

Value GraphBuilder::layer_norm(Value x, Value gamma, Value beta, int64_t begin_norm_axis, int64_t begin_params_axis,
                               float epsilon) {
  return op("LayerNorm", {x, gamma, beta},
            {{"begin_norm_axis", begin_norm_axis},
             {"begin_params_axis", begin_params_axis},
             {"epsilon", double{epsilon}}});
}

Value GraphBuilder::softmax(Value x, int64_t axis) { return op("Softmax", {x}, {{"axis", axis}}); }

Value GraphBuilder::transpose(Value x, const std::vector<int64_t>& perm) {
  return op("Transpose", {x}, {{"perm", perm}});
}

Value GraphBuilder::batch_matmul(Value a, Value b, bool ta, bool tb) {
  return op("BatchMatMul", {a, b}, {{"transpose_a", int64_t{ta}}, {"transpose_b", int64_t{tb}}});
}

Value GraphBuilder::linear(Value x, Value w, bool tb) { return op("Linear", {x, w}, {{"transpose_b", int64_t{tb}}}); }

Value GraphBuilder::embedding(Value table, Value ids) { return op("EmbeddingLookup", {table, ids}); }

Value GraphBuilder::dropout(Value x, Value seeds, float p, int64_t batch_axis) {
  // The site's salt is its name's FNV-1a hash: every rank building the same graph agrees on it.
  const std::string name = next_name("Dropout");
  return op("Dropout", {x, seeds},
            {{"p", double{p}}, {"salt", static_cast<int64_t>(stream_of(name))}, {"batch_axis", batch_axis}}, name);
}

Value GraphBuilder::causal_mask(Value scores) { return op("CausalMask", {scores}); }

Value GraphBuilder::softmax_cross_entropy(Value logits, Value labels, int64_t classes) {
  return op("SoftmaxCrossEntropy", {logits, labels}, classes < 0 ? Attrs{} : Attrs{{"classes", classes}});
}

Value GraphBuilder::mse_loss(Value pred, Value target) { return op("MSELoss", {pred, target}); }

}  // namespace sf
