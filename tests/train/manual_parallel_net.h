// Seed 000's network for the manual-parallel tests: every rank is fed the whole batch, slices
// its rows by rank, and reduces its loss with AllReduce(loss) / device_num inside the graph.
#pragma once

#include <shardflow/ops/collective_builder.h>
#include <shardflow/train/losses.h>
#include <shardflow/train/mlp.h>

namespace sf::traintest {

// Seed 000's Network: x = x[cur_rank*shard_size : cur_rank*shard_size + shard_size], then the MLP.
class SlicedMlp : public nn::Mlp {
 public:
  SlicedMlp(int64_t begin, int64_t end) : Mlp(784, {512, 512}, 10), begin_(begin), end_(end) {}
  Value construct(GraphBuilder& b, Value x) override { return Mlp::construct(b, b.strided_slice(x, {begin_}, {end_})); }

 private:
  int64_t begin_, end_;
};

// Seed 000's ReduceLoss: this rank's labels, cross entropy, AllReduce(loss) / device_num.
class ReduceLoss : public nn::LossFn {
 public:
  ReduceLoss(int64_t begin, int64_t end, int device_num) : begin_(begin), end_(end), n_(device_num) {}
  Value operator()(GraphBuilder& b, Value logits, Value label) const override {
    label = b.strided_slice(label, {begin_}, {end_});
    Value loss_value = nn::CrossEntropyLoss()(b, logits, label);
    loss_value = CollectiveBuilder(b, {"world", n_}).all_reduce(loss_value);
    return b.op("RealDiv", {loss_value, b.fill({}, static_cast<float>(n_))});
  }

 private:
  int64_t begin_, end_;
  int n_;
};

}  // namespace sf::traintest
