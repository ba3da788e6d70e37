# --- shardflow: completion begin ---
# resnet.py, the module seed 003's training script imports (`from resnet import resnet50`). Its
# ResNet class is the document's first code block, unchanged apart from imports; the rest —
# Head, the layers, the bottleneck block, fc_with_initialize and resnet50, which the document
# leaves to MindSpore's sample code — is written here, sized for Fashion-MNIST (the shipped
# stand-in for CIFAR-10) on CPU cores:
# - Head: a 7x7 convolution of stride 2 from the image's one channel to 64, BatchNorm, ReLU, and a
#   3x3 max pool of stride 2, as ResNet-50's stem.
# - Each MakeLayer: one bottleneck block (ResNet-50 has 3, 4, 6, 3), with the document's widths.
# examples/pipeline_parallel --resnet document builds the same network in C++
# (examples/seed003_net.h, ResNetShape::document); tests/python/test_seeds.py compares the two.
from shardflow import nn, ops


class ResidualBlock(nn.Cell):
    """1x1 reduce, 3x3, 1x1 expand by 4, each with BatchNorm; a projection shortcut where the
    shape changes; the residual Add, then ReLU."""
    expansion = 4

    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        mid = out_channels // self.expansion
        self.conv1 = nn.Conv2d(in_channels, mid, 1, pad_mode="valid")
        self.bn1 = nn.BatchNorm2d(mid)
        self.conv2 = nn.Conv2d(mid, mid, 3, stride=stride, pad_mode="pad", padding=1)
        self.bn2 = nn.BatchNorm2d(mid)
        self.conv3 = nn.Conv2d(mid, out_channels, 1, pad_mode="valid")
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.relu = ops.ReLU()
        self.add = ops.Add()
        self.down_sample = stride != 1 or in_channels != out_channels
        if self.down_sample:
            self.down_sample_conv = nn.Conv2d(in_channels, out_channels, 1, stride=stride, pad_mode="valid")
            self.down_sample_bn = nn.BatchNorm2d(out_channels)

    def construct(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = self.down_sample_bn(self.down_sample_conv(x)) if self.down_sample else x
        return self.relu(self.add(out, identity))


class Head(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 64, 7, stride=2, pad_mode="pad", padding=3)
        self.bn = nn.BatchNorm2d(64)
        self.relu = ops.ReLU()
        self.pool = nn.MaxPool2d(3, 2, pad_mode="pad", padding=1)

    def construct(self, x):
        return self.pool(self.relu(self.bn(self.conv(x))))


def _make_layer(block, in_channels, out_channels, stride):
    """A layer of one bottleneck block, which takes the layer's name (layer1.conv1.weight)."""
    return block(in_channels, out_channels, stride)


MakeLayer0 = MakeLayer1 = MakeLayer2 = MakeLayer3 = _make_layer


def fc_with_initialize(input_channels, out_channels):
    return nn.Dense(input_channels, out_channels, weight_init="normal", bias_init="zeros")
# --- shardflow: completion end ---

class ResNet(nn.Cell):
    """ResNet"""
    def __init__(self, block, num_classes=100, batch_size=32):
        """init"""
        super(ResNet, self).__init__()
        self.batch_size = batch_size
        self.num_classes = num_classes
        self.head = Head()
        self.layer1 = MakeLayer0(block, in_channels=64, out_channels=256, stride=1)
        self.layer2 = MakeLayer1(block, in_channels=256, out_channels=512, stride=2)
        self.layer3 = MakeLayer2(block, in_channels=512, out_channels=1024, stride=2)
        self.layer4 = MakeLayer3(block, in_channels=1024, out_channels=2048, stride=2)
        self.pool = ops.ReduceMean(keep_dims=True)
        self.squeeze = ops.Squeeze(axis=(2, 3))
        self.fc = fc_with_initialize(512 * block.expansion, num_classes)

        # pipeline parallel config
        self.head.pipeline_stage = 0
        self.layer1.pipeline_stage = 0
        self.layer2.pipeline_stage = 0
        self.layer3.pipeline_stage = 1
        self.layer4.pipeline_stage = 1
        self.fc.pipeline_stage = 1

    def construct(self, x):
        """construct"""
        x = self.head(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.pool(x, (2, 3))
        x = self.squeeze(x)
        x = self.fc(x)
        return x

# --- shardflow: completion begin ---
def resnet50(batch_size, num_classes):
    return ResNet(ResidualBlock, num_classes, batch_size)
# --- shardflow: completion end ---
