# Seed 004, data parallel (MindSpore's distributed_data_parallel.py), built from the document's
# code blocks in order with only their imports changed (mindspore -> shardflow). Every rank
# holds the whole network, trains on its shard of Fashion-MNIST and AllReduces the gradients.
#
#   DATA_PATH=/usr/share/datasets/fashion-mnist sfrun -n 8 -- python3 seed004_data_parallel.py
#   DATA_PATH=/usr/share/datasets/fashion-mnist mpirun -n 8 python3 seed004_data_parallel.py
#   DATA_PATH=/usr/share/datasets/fashion-mnist python3 -m shardflow.launch --devices 8 seed004_data_parallel.py
#
# Sections between "shardflow: completion" markers are not the document's: they complete what
# it leaves out (tests/python/test_seed_blocks.py checks that everything else is its code).

import shardflow as ms
from shardflow.communication import init

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
init()
ms.set_seed(1)

# --- shardflow: completion begin ---
# The document's next block shows MnistDataset's sharding arguments with a dataset_path it
# defines only in the block after; the path is the launcher's DATA_PATH, as there.
import os
dataset_path = os.getenv("DATA_PATH")
# --- shardflow: completion end ---

import shardflow.dataset as ds
from shardflow.communication import get_rank, get_group_size

rank_id = get_rank()
rank_size = get_group_size()
dataset = ds.MnistDataset(dataset_path, num_shards=rank_size, shard_id=rank_id)

import os
import shardflow.dataset as ds
from shardflow.communication import get_rank, get_group_size

def create_dataset(batch_size):
    dataset_path = os.getenv("DATA_PATH")
    rank_id = get_rank()
    rank_size = get_group_size()
    dataset = ds.MnistDataset(dataset_path, num_shards=rank_size, shard_id=rank_id)
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

data_set = create_dataset(32)

from shardflow import nn

class Network(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_relu_sequential = nn.SequentialCell(
            nn.Dense(28*28, 512, weight_init="normal", bias_init="zeros"),
            nn.ReLU(),
            nn.Dense(512, 512, weight_init="normal", bias_init="zeros"),
            nn.ReLU(),
            nn.Dense(512, 10, weight_init="normal", bias_init="zeros")
        )

    def construct(self, x):
        x = self.flatten(x)
        logits = self.dense_relu_sequential(x)
        return logits

net = Network()

from shardflow import nn
import shardflow as ms

loss_fn = nn.CrossEntropyLoss()
optimizer = nn.SGD(net.trainable_params(), 1e-2)

def forward_fn(data, label):
    logits = net(data)
    loss = loss_fn(logits, label)
    return loss, logits

grad_fn = ms.value_and_grad(forward_fn, None, net.trainable_params(), has_aux=True)
grad_reducer = nn.DistributedGradReducer(optimizer.parameters)

for epoch in range(10):
    i = 0
    for data, label in data_set:
        (loss, _), grads = grad_fn(data, label)
        grads = grad_reducer(grads)
        optimizer(grads)
        if i % 10 == 0:
            print("epoch: %s, step: %s, loss is %s" % (epoch, i, loss))
        i += 1
