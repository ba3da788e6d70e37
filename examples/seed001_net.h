// Seed 001's network (advanced_distributed_operator_parallel.py): Flatten, then three MatMuls
// without bias, ReLU between them, each op a Primitive that shard() can split. Shared by
// examples/operator_parallel.cc and the snippet docs/operator_parallel.md quotes.
#pragma once

#include <shardflow/shardflow.h>

namespace seed001 {

// [network]
class Network : public sf::nn::Cell {
 public:
  sf::Parameter& fc1_weight = register_parameter("fc1_weight", {28 * 28, 512}, "normal");
  sf::Parameter& fc2_weight = register_parameter("fc2_weight", {512, 512}, "normal");
  sf::Parameter& fc3_weight = register_parameter("fc3_weight", {512, 10}, "normal");
  sf::Primitive& flatten = register_primitive("flatten", "Flatten");
  sf::Primitive& matmul1 = register_primitive("matmul1", "MatMul");
  sf::Primitive& relu1 = register_primitive("relu1", "ReLU");
  sf::Primitive& matmul2 = register_primitive("matmul2", "MatMul");
  sf::Primitive& relu2 = register_primitive("relu2", "ReLU");
  sf::Primitive& matmul3 = register_primitive("matmul3", "MatMul");

  sf::Value construct(sf::GraphBuilder& b, sf::Value x) override {
    x = flatten(b, {x});
    x = matmul1(b, {x, param(b, fc1_weight)});
    x = relu1(b, {x});
    x = matmul2(b, {x, param(b, fc2_weight)});
    x = relu2(b, {x});
    sf::Value logits = matmul3(b, {x, param(b, fc3_weight)});
    return logits;
  }
};
// [network]

}  // namespace seed001
