# Seed 003, pipeline parallel (MindSpore's apply_pipeline_parallel sample), built from the
# document's code blocks in order with only their imports changed (mindspore -> shardflow). A
# ResNet (resnet.py: the document's ResNet class and the parts it leaves to the sample code)
# split into 2 stages, each batch cut into 2 micro-batches (PipelineCell), Momentum on each
# stage's own parameters (infer_param_pipeline_stage). Fashion-MNIST stands in for CIFAR-10,
# which Debian does not ship.
#
#   DATA_PATH=/usr/share/datasets/fashion-mnist sfrun -n 2 -- python3 seed003_pipeline_parallel.py
#   DATA_PATH=/usr/share/datasets/fashion-mnist mpirun -n 2 python3 seed003_pipeline_parallel.py
#   DATA_PATH=/usr/share/datasets/fashion-mnist python3 -m shardflow.launch --devices 2 seed003_pipeline_parallel.py
#   EPOCHS=2 ...                           # fewer than the seed's ten epochs
#
# modules: resnet.py
# Sections between "shardflow: completion" markers are not the document's (see
# tests/python/test_seed_blocks.py).

# --- shardflow: completion begin ---
import os
import shardflow as ms
import shardflow.dataset as ds
from shardflow.communication import init

init()
ms.set_seed(3)  # the seed of examples/pipeline_parallel, which trains the same model


def create_dataset(data_path, batch_size=32):
    """The document's CIFAR-10 helper, on Fashion-MNIST (ten classes of 28x28 images, one channel):
    rescaled, normalized, channels first, int32 labels, batches of 32."""
    dataset = ds.MnistDataset(data_path)
    dataset = dataset.map([ds.vision.Rescale(1.0 / 255.0, 0), ds.vision.Normalize(mean=(0.2860,), std=(0.3530,)),
                           ds.vision.HWC2CHW()], 'image')
    dataset = dataset.map(ds.transforms.TypeCast(ms.int32), 'label')
    return dataset.batch(batch_size, drop_remainder=True)


class SoftmaxCrossEntropyExpand(ms.nn.CrossEntropyLoss):
    """The sample code's loss: softmax cross entropy of the logits against int labels, averaged."""

    def __init__(self, sparse=False):
        super().__init__()
# --- shardflow: completion end ---

from shardflow import context, Model, nn
from shardflow.nn import Momentum
from shardflow.train.callback import LossMonitor
from shardflow.context import ParallelMode
from resnet import resnet50

def test_train_cifar(epoch_size=10):
    context.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL, gradients_mean=True)
    context.set_auto_parallel_context(pipeline_stages=2, full_batch=True)
    loss_cb = LossMonitor()
    data_path = os.getenv('DATA_PATH')
    dataset = create_dataset(data_path)
    batch_size = 32
    num_classes = 10
    net = resnet50(batch_size, num_classes)
    loss = SoftmaxCrossEntropyExpand(sparse=True)
    net_with_loss = nn.WithLossCell(net, loss)
    net_pipeline = nn.PipelineCell(net_with_loss, 2)
    opt = Momentum(net.infer_param_pipeline_stage(), 0.01, 0.9)
    model = Model(net_pipeline, optimizer=opt)
    model.train(epoch_size, dataset, callbacks=[loss_cb], dataset_sink_mode=True)

# --- shardflow: completion begin ---
if __name__ == "__main__":
    test_train_cifar(int(os.getenv("EPOCHS", "10")))
# --- shardflow: completion end ---
