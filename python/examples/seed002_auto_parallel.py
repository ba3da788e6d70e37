# Seed 002, the parallel quick start (MindSpore's distributed_training_quickstart net.py),
# built from the document's code blocks in order with only their imports changed. Fully
# automatic parallel over 8 devices: only matmul is sharded, ((2, 4), (4, 1)); sharding
# propagation gives relu and matmul2 their strategies. A random dataset, MSELoss, Momentum, a
# checkpoint per rank in <rank_id>/, and the IR of every rank in ../saved_graph (save_graphs).
#
#   sfrun -n 8 -- python3 seed002_auto_parallel.py
#   mpirun -n 8 python3 seed002_auto_parallel.py
#   python3 -m shardflow.launch --devices 8 seed002_auto_parallel.py
#
# Sections between "shardflow: completion" markers are not the document's (see
# tests/python/test_seed_blocks.py).

# --- shardflow: completion begin ---
# The document's blocks use these names without showing their imports (net.py has them).
import shardflow as ms
from shardflow import ops
from shardflow.nn import Cell, MSELoss, Momentum
from shardflow import Parameter, Model
from shardflow.common.initializer import initializer
from shardflow.communication import init, get_rank
from shardflow.train import LossMonitor, ModelCheckpoint
import shardflow.dataset as ds
# --- shardflow: completion end ---

import numpy as np
def get_dataset(batch_size, in_dim, out_dim, step_per_epoch):
    np.random.seed(1)
    input_data = np.random.rand(batch_size, in_dim).astype(np.float32)
    label_data = np.random.rand(batch_size, out_dim).astype(np.float32)
    def generate():
        for _ in range(step_per_epoch):
            yield (input_data, label_data)
    return generate

class Net(Cell):
    """define net"""
    def __init__(self, in_dim, hidden_dim, out_dim):
        super().__init__()
        self.in_dim = in_dim
        self.hidden_dim = hidden_dim
        self.out_dim = out_dim
        self.weight = Parameter(initializer("normal", [self.in_dim, self.hidden_dim]), "w")
        self.weight2 = Parameter(initializer("normal", [self.hidden_dim, self.out_dim]), "w2")
        self.matmul = ops.MatMul()
        self.relu = ops.ReLU()
        self.matmul2 = ops.MatMul()

    def construct(self, x):
        out = self.matmul(x, self.weight)
        out = self.relu(out)
        out = self.matmul2(out, self.weight2)
        return out

class Net(Cell):
    """define net"""
    def __init__(self, in_dim, hidden_dim, out_dim):
        super().__init__()
        self.in_dim = in_dim
        self.hidden_dim = hidden_dim
        self.out_dim = out_dim
        self.weight = Parameter(initializer("normal", [self.in_dim, self.hidden_dim]), "w")
        self.weight2 = Parameter(initializer("normal", [self.hidden_dim, self.out_dim]), "w2")
        # Set the sharding strategy manually for the matmul operator
        # where (2, 4) means that the input data of matmul operator is sliced into two parts in batch dimension and four parts in width dimension
        # (4, 1) indicates that the weights of the matmul operator are sliced into four parts in the HEIGHT dimension
        self.matmul = ops.MatMul().shard(((2, 4), (4, 1)))
        self.relu = ops.ReLU()
        self.matmul2 = ops.MatMul()

    def construct(self, x):
        out = self.matmul(x, self.weight)
        out = self.relu(out)
        out = self.matmul2(out, self.weight2)
        return out

# --- shardflow: completion begin ---
# The document's main block calls get_dataset(batch, step_per_epoch, in_dim, out_dim), its
# arguments in another order than the definition above (in_dim would be 4 and the data would
# not fit Net(32, 16, 16)). The call is kept as written; this takes its arguments in the order
# the call gives them.
_get_dataset = get_dataset
def get_dataset(batch_size, step_per_epoch, in_dim, out_dim):
    return _get_dataset(batch_size, in_dim, out_dim, step_per_epoch)
# --- shardflow: completion end ---

var_step_per_epoch = 4
var_single_batch_size = 2
var_in_dim = 32
var_hidden_dim = 16
var_out_dim = 16

ms.set_context(mode=ms.GRAPH_MODE, device_target="GPU", save_graphs=2, save_graphs_path="../saved_graph")

# Single-machine 8-card environment. Parallel mode is fully automatic parallelism, and strategy search is set to strategy propagation algorithm
ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.AUTO_PARALLEL, search_mode="sharding_propagation", dataset_strategy="data_parallel")

# Initialize the communication environment and get the logical serial number of the current card, i.e. rank_id
init("nccl")
rank_id = get_rank()

# Randomly constructed datasets
fake_dataset = get_dataset(var_single_batch_size, var_step_per_epoch, var_in_dim, var_out_dim)
dataset = ds.GeneratorDataset(fake_dataset, ["input", "label"])

# Define the network structure
net = Net(var_in_dim, var_hidden_dim, var_out_dim)

# Define the loss function and callback
loss = MSELoss()
callback = [LossMonitor(), ModelCheckpoint(directory="{}".format(rank_id))]

# Define the optimizer
learning_rate = 0.2
momentum = 0.1
epoch_size = 5
opt = Momentum(net.trainable_params(), learning_rate, momentum)

# Model training
model = Model(net, loss_fn=loss, optimizer=opt)
model.train(epoch_size, dataset, callbacks=callback, dataset_sink_mode=False)
