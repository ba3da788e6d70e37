// Seed 003's ResNet, kept to its block structure and sized for Fashion-MNIST on 2 CPU cores:
// a head (conv 3x3, BatchNorm, ReLU, max pool), four layers of bottleneck blocks (1x1 reduce,
// 3x3, 1x1 expand by 4, each with BatchNorm; a projection shortcut where the shape changes;
// the residual Add, then ReLU), global average pooling and a Dense classifier.
// Channels 16 -> 32, 64, 128, 256 (ResNet-50: 64 -> 256, 512, 1024, 2048); one block per layer
// (ResNet-50: 3, 4, 6, 3). Images of 28x28: 14x14 after the head, 14, 7, 4, 2 after the layers.
// ResNetShape::document() is instead the document's own widths and ResNet-50's stem, as
// python/examples/resnet.py builds them, so that the seed's Python script and this example
// train the same model (tests/python/test_seeds.py compares their losses).
#pragma once

#include <array>
#include <string>

#include <shardflow/shardflow.h>

namespace seed003 {

namespace nn = sf::nn;

// The head's convolution and pool, the channels after the head and each layer, and the
// classifier's initialisers.
struct ResNetShape {
  int64_t stem_kernel = 3, stem_stride = 1, stem_pad = 1;
  int64_t pool_kernel = 2, pool_stride = 2, pool_pad = 0;
  std::array<int64_t, 5> channels{16, 32, 64, 128, 256};
  std::string fc_weight_init = "dense_weight", fc_bias_init = "dense_bias";

  // The document's ResNet: a 7x7 convolution of stride 2 to 64 channels and a 3x3 max pool of
  // stride 2 (ResNet-50's stem), then 256, 512, 1024, 2048 channels; the classifier initialised
  // normal / zeros (the sample code's fc_with_initialize). Images of 28x28: 7x7 after the head,
  // 7, 4, 2, 1 after the layers.
  static ResNetShape document() {
    ResNetShape s;
    s.stem_kernel = 7, s.stem_stride = 2, s.stem_pad = 3;
    s.pool_kernel = 3, s.pool_stride = 2, s.pool_pad = 1;
    s.channels = {64, 256, 512, 1024, 2048};
    s.fc_weight_init = "normal", s.fc_bias_init = "zeros";
    return s;
  }
};

class ResidualBlock : public nn::Cell {
 public:
  static constexpr int64_t kExpansion = 4;
  ResidualBlock(int64_t in_channels, int64_t out_channels, int64_t stride) {
    const int64_t mid = out_channels / kExpansion;
    conv1_ = register_cell("conv1", std::make_shared<nn::Conv2d>(in_channels, mid, 1));
    bn1_ = register_cell("bn1", std::make_shared<nn::BatchNorm2d>(mid));
    conv2_ = register_cell("conv2", std::make_shared<nn::Conv2d>(mid, mid, 3, stride, 1));
    bn2_ = register_cell("bn2", std::make_shared<nn::BatchNorm2d>(mid));
    conv3_ = register_cell("conv3", std::make_shared<nn::Conv2d>(mid, out_channels, 1));
    bn3_ = register_cell("bn3", std::make_shared<nn::BatchNorm2d>(out_channels));
    if (stride != 1 || in_channels != out_channels) {
      down_conv_ = register_cell("down_sample_conv", std::make_shared<nn::Conv2d>(in_channels, out_channels, 1, stride));
      down_bn_ = register_cell("down_sample_bn", std::make_shared<nn::BatchNorm2d>(out_channels));
    }
  }
  // Operator parallel inside a stage of dp x tp devices (the batch over dp, channels over tp):
  // Megatron's pairing for convolutions — the 1x1 reduce splits its output channels, the 3x3
  // reads them split and sums its partial outputs (an AllReduce the planner inserts); BatchNorm
  // is split by channel, where its statistics are exact.
  // The 1x1 expand splits its output channels again, for bn3 and the residual Add; the
  // projection shortcut reads the block's input split by channel and sums its partial outputs.
  // Every BatchNorm splits the batch over dp only, as the same pipeline without tp does.
  void shard_channels(int64_t dp, int64_t tp) {
    const sf::OpStrategy bn{{{dp, tp, 1, 1}, {tp}, {tp}, {tp}, {tp}}};
    conv1_->shard({{dp, 1, 1, 1}, {tp, 1, 1, 1}});
    conv2_->shard({{dp, tp, 1, 1}, {1, tp, 1, 1}});
    conv3_->shard({{dp, 1, 1, 1}, {tp, 1, 1, 1}});
    for (auto* b : {bn1_.get(), bn2_.get(), bn3_.get()}) b->shard(bn.in);
    if (down_conv_) {
      down_conv_->shard({{dp, tp, 1, 1}, {1, tp, 1, 1}});
      down_bn_->shard(bn.in);
    }
  }
  sf::Value construct(sf::GraphBuilder& b, sf::Value x) override {
    sf::Value out = b.relu((*bn1_)(b, (*conv1_)(b, x)));
    out = b.relu((*bn2_)(b, (*conv2_)(b, out)));
    out = (*bn3_)(b, (*conv3_)(b, out));
    const sf::Value identity = down_conv_ ? (*down_bn_)(b, (*down_conv_)(b, x)) : x;
    return b.relu(b.add(out, identity));
  }

 private:
  std::shared_ptr<nn::Conv2d> conv1_, conv2_, conv3_, down_conv_;
  std::shared_ptr<nn::BatchNorm2d> bn1_, bn2_, bn3_, down_bn_;
};

class Head : public nn::Cell {
 public:
  explicit Head(const ResNetShape& s = {}) {
    conv_ = register_cell("conv", std::make_shared<nn::Conv2d>(1, s.channels[0], s.stem_kernel, s.stem_stride,
                                                              s.stem_pad));
    bn_ = register_cell("bn", std::make_shared<nn::BatchNorm2d>(s.channels[0]));
    pool_ = register_cell("pool", std::make_shared<nn::MaxPool2d>(s.pool_kernel, s.pool_stride, s.pool_pad));
  }
  // One input channel: the convolution splits its output channels; BatchNorm and the pool follow.
  void shard_channels(int64_t dp, int64_t tp) {
    conv_->shard({{dp, 1, 1, 1}, {tp, 1, 1, 1}});
    bn_->shard({{dp, tp, 1, 1}, {tp}, {tp}, {tp}, {tp}});
    pool_->shard({{dp, tp, 1, 1}});
  }
  sf::Value construct(sf::GraphBuilder& b, sf::Value x) override {
    return (*pool_)(b, b.relu((*bn_)(b, (*conv_)(b, x))));
  }

 private:
  std::shared_ptr<nn::Conv2d> conv_;
  std::shared_ptr<nn::BatchNorm2d> bn_;
  std::shared_ptr<nn::MaxPool2d> pool_;
};

class ResNet : public nn::Cell {
 public:
  explicit ResNet(int64_t num_classes = 10, const ResNetShape& s = {}) {
    const auto& c = s.channels;
    head = register_cell("head", std::make_shared<Head>(s));
    layer1 = register_cell("layer1", std::make_shared<ResidualBlock>(c[0], c[1], 1));
    layer2 = register_cell("layer2", std::make_shared<ResidualBlock>(c[1], c[2], 2));
    layer3 = register_cell("layer3", std::make_shared<ResidualBlock>(c[2], c[3], 2));
    layer4 = register_cell("layer4", std::make_shared<ResidualBlock>(c[3], c[4], 2));
    pool = register_cell("pool", std::make_shared<nn::GlobalAvgPool2d>());
    fc = register_cell("fc", std::make_shared<nn::Dense>(c[4], num_classes, s.fc_weight_init, s.fc_bias_init));
  }
  // The cells that carry parameters, in execution order: the units a pipeline splits.
  static constexpr int kCells = 6;
  // The cells over `stages` pipeline stages (with interleaving, the stages x chunks virtual
  // stages, in execution order), in contiguous runs of kCells / stages cells; the cells left
  // over go one each to the first and last runs in turn. 2 stages give the seed's split (head
  // to layer2, layer3 to fc), 4 give 2, 1, 1, 2 cells. Throws InvalidArgument beyond kCells.
  void set_stages(int stages) {
    SF_ENFORCE(stages >= 1 && stages <= kCells, InvalidArgument,
               "pipeline: {} stages (stages x interleave) for a ResNet of {} cells (head, layer1..4, fc): each "
               "stage needs a cell of its own",
               stages, kCells);
    std::vector<int> sizes(stages, kCells / stages);
    for (int extra = 0; extra < kCells % stages; ++extra) ++sizes[extra % 2 == 0 ? extra / 2 : stages - 1 - extra / 2];
    std::vector<nn::Cell*> cells{head.get(), layer1.get(), layer2.get(), layer3.get(), layer4.get(), fc.get()};
    size_t next = 0;
    for (int s = 0; s < stages; ++s)
      for (int k = 0; k < sizes[s]; ++k) cells[next++]->set_pipeline_stage(s);
  }
  // Every block's convolutions and BatchNorms split over tp inside a stage of dp x tp devices
  // (ResidualBlock::shard_channels); the other ops take the data-parallel default.
  void shard_channels(int64_t dp, int64_t tp) {
    head->shard_channels(dp, tp);
    for (auto* layer : {layer1.get(), layer2.get(), layer3.get(), layer4.get()}) layer->shard_channels(dp, tp);
  }
  sf::Value construct(sf::GraphBuilder& b, sf::Value x) override {
    x = (*head)(b, x);
    x = (*layer1)(b, x);
    x = (*layer2)(b, x);
    x = (*layer3)(b, x);
    x = (*layer4)(b, x);
    x = (*pool)(b, x);  // the seed's ReduceMean over (2, 3) and Squeeze
    return (*fc)(b, x);
  }

  std::shared_ptr<Head> head;
  std::shared_ptr<ResidualBlock> layer1, layer2, layer3, layer4;
  std::shared_ptr<nn::GlobalAvgPool2d> pool;
  std::shared_ptr<nn::Dense> fc;
};

}  // namespace seed003
