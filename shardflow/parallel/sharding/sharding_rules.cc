#include <map>

#include <shardflow/parallel/sharding/sharding_rule.h>

namespace sf {

namespace {
const std::map<std::string, const ShardingRule*>& table() {
  static const std::map<std::string, const ShardingRule*> rules = {
      {"MatMul", &kMatMulRule},
      {"Add", &kElementwiseRule},
      {"Sub", &kElementwiseRule},
      {"Mul", &kElementwiseRule},
      {"RealDiv", &kElementwiseRule},
      {"Equal", &kElementwiseRule},
      {"ReLU", &kElementwiseRule},
      {"ReluGrad", &kElementwiseRule},
      {"BiasAdd", &kBiasAddRule},
      {"ReduceSum", &kReduceRule},
      {"ReduceMean", &kReduceRule},
      {"SoftmaxCrossEntropy", &kSoftmaxCrossEntropyRule},
      {"MSELoss", &kMseLossRule},
      {"Reshape", &kReshapeRule},
      {"Flatten", &kReshapeRule},
      {"Conv2D", &kConv2dRule},
      {"BatchNorm", &kBatchNormRule},
      {"BatchNormUpdateMoving", &kBatchNormUpdateMovingRule},
      {"MaxPool", &kPoolRule},
      {"AvgPool", &kPoolRule},
      {"GeLU", &kElementwiseRule},
      {"GeLUGrad", &kElementwiseRule},
      {"LayerNorm", &kLayerNormRule},
      {"LayerNormGrad", &kLayerNormRule},
      {"LayerNormGammaGrad", &kLayerNormGammaGradRule},
      {"Softmax", &kSoftmaxRule},
      {"SoftmaxGrad", &kSoftmaxRule},
      {"Transpose", &kTransposeRule},
      {"BatchMatMul", &kBatchMatMulRule},
      {"Linear", &kLinearRule},
      {"LinearGradWeight", &kLinearGradWeightRule},
      {"StridedSlice", &kStridedSliceRule},
      {"Dropout", &kDropoutRule},
      {"CausalMask", &kCausalMaskRule},
      {"EmbeddingLookup", &kEmbeddingRule},
      {"EmbeddingLookupGrad", &kEmbeddingGradRule},
  };
  return rules;
}
}  // namespace

const ShardingRule* find_sharding_rule(const std::string& op) {
  auto it = table().find(op);
  return it == table().end() ? nullptr : it->second;
}

std::vector<std::string> ops_with_sharding_rules() {
  std::vector<std::string> out;
  for (const auto& [name, rule] : table()) out.push_back(name);
  return out;
}

}  // namespace sf
