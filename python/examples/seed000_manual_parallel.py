# Seed 000, manual parallel (MindSpore's manual_parallel/train.py), built from the document's
# code blocks in order with only their imports changed (mindspore -> shardflow). Every rank
# loads the whole batch, its network keeps this rank's slice of the rows, and the loss is
# AllReduced inside the graph and divided by the device count.
#
#   DATA_PATH=/usr/share/datasets/fashion-mnist sfrun -n 8 -- python3 seed000_manual_parallel.py
#   DATA_PATH=/usr/share/datasets/fashion-mnist mpirun -n 8 python3 seed000_manual_parallel.py
#   DATA_PATH=/usr/share/datasets/fashion-mnist python3 -m shardflow.launch --devices 8 seed000_manual_parallel.py
#
# Sections between "shardflow: completion" markers are not the document's (see
# tests/python/test_seed_blocks.py).

import shardflow as ms
from shardflow.communication import init, get_rank, get_group_size
ms.set_context(mode=ms.GRAPH_MODE)
init()
cur_rank = get_rank()
batch_size = 32
device_num = get_group_size()
shard_size = batch_size // device_num

# --- shardflow: completion begin ---
# The document says this step sets the random seed, but its block leaves the call out; the
# C++ example sets 1, as the other seeds do.
ms.set_seed(1)
# The document sets no parallel mode, so each rank would step on the gradient of its own slice
# and the ranks' parameters would drift apart. As examples/manual_parallel.cc does, average the
# parameters' gradients over the ranks (hybrid parallel): every rank then trains the 1-device
# model.
ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.HYBRID_PARALLEL, gradients_mean=True)
# --- shardflow: completion end ---

from shardflow import nn
from shardflow.communication import get_rank, get_group_size

class Network(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.layer1 = nn.Dense(28*28, 512)
        self.relu1 = nn.ReLU()
        self.layer2 = nn.Dense(512, 512)
        self.relu2 = nn.ReLU()
        self.layer3 = nn.Dense(512, 10)

    def construct(self, x):
        x = x[cur_rank*shard_size:cur_rank*shard_size + shard_size]
        x = self.flatten(x)
        x = self.layer1(x)
        x = self.relu1(x)
        x = self.layer2(x)
        x = self.relu2(x)
        logits = self.layer3(x)
        return logits

net = Network()

import os
import shardflow.dataset as ds

def create_dataset():
    dataset_path = os.getenv("DATA_PATH")
    dataset = ds.MnistDataset(dataset_path)
    image_transforms = [
        ds.vision.Rescale(1.0 / 255.0, 0),
        ds.vision.Normalize(mean=(0.1307,), std=(0.3081,)),
        ds.vision.HWC2CHW()
    ]
    label_transform = ds.transforms.TypeCast(ms.int32)
    dataset = dataset.map(image_transforms, 'image')
    dataset = dataset.map(label_transform, 'label')
    dataset = dataset.batch(batch_size)
    return dataset

data_set = create_dataset()

from shardflow import nn, ops
from shardflow.communication import get_rank, get_group_size

class ReduceLoss(nn.Cell):
    def __init__(self):
        super().__init__()
        self.loss = nn.CrossEntropyLoss()
        self.all_reduce = ops.AllReduce()

    def construct(self, data, label):
        label = label[cur_rank*shard_size:cur_rank*shard_size + shard_size]
        loss_value = self.loss(data, label)
        loss_value = self.all_reduce(loss_value) / device_num
        return loss_value

loss_fn = ReduceLoss()

import shardflow as ms
from shardflow import nn, train

optimizer = nn.SGD(net.trainable_params(), 1e-2)
loss_cb = train.LossMonitor(20)
model = ms.Model(net, loss_fn=loss_fn, optimizer=optimizer)
model.train(10, data_set, callbacks=[loss_cb])
