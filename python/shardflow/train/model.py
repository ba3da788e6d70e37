"""Model (mindspore.Model): trains a network with a loss and an optimizer. The network's
construct and the loss are traced once; each epoch then runs in the actor runtime with the GIL
released, and the callbacks are called after each step."""
import sys

from .. import _shardflow as _C
from ..nn.cell import Cell
from ..nn.loss import LossBase
from ..nn.optim import Optimizer
from ..nn.wrap import PipelineCell
from .callback import Callback, _Native


def _loss(loss_fn):
    if loss_fn is None:
        return None
    if isinstance(loss_fn, LossBase):
        return loss_fn._loss_fn
    if isinstance(loss_fn, Cell):
        return _C.PyLossFn(loss_fn)
    raise _C.InvalidArgument(f"Model: loss_fn is a Cell taking (logits, labels), not {type(loss_fn).__name__}")


def _callbacks(callbacks):
    if callbacks is None:
        return []
    if not isinstance(callbacks, (list, tuple)):
        callbacks = [callbacks]
    for c in callbacks:
        if not isinstance(c, (Callback, _Native)):
            raise _C.InvalidArgument(f"Model.train: callback {type(c).__name__} is not a train.Callback (subclass "
                                     "Callback and override its on_train_step_end, step_end, ...)")
    return [getattr(c, "_cxx", c) for c in callbacks]


def _dataset(dataset, who):
    d = getattr(dataset, "_d", None)
    if d is None:
        raise _C.InvalidArgument(f"{who}: the dataset is a shardflow.dataset dataset (MnistDataset, "
                                 f"GeneratorDataset, ...), not {type(dataset).__name__}")
    return d


def _batched(dataset):
    """The dataset as Model.train takes it: batched. An unbatched GeneratorDataset whose rows are
    whole batches (seed 002's) trains one step per row, in the order the rows were yielded."""
    d = _dataset(dataset, "Model.train")
    if d.batch_size:
        return d
    rows = getattr(dataset, "_row_columns", None)
    if rows is None:
        raise _C.InvalidArgument("Model.train: the dataset is not batched (call .batch(n))")
    names, columns, sharded = rows
    if sharded:
        raise _C.InvalidArgument("Model.train: a GeneratorDataset of whole batches cannot also be sharded "
                                 "(num_shards); yield rows and call .batch(n)")
    if any(c.ndim < 2 or c.shape[1] != columns[0].shape[1] for c in columns):
        raise _C.InvalidArgument("Model.train: the dataset is not batched (call .batch(n)); its rows are not whole "
                                 "batches of one size")
    batch = columns[0].shape[1]
    flat = [c.reshape((c.shape[0] * batch,) + c.shape[2:]) for c in columns]
    return _C.Dataset.from_columns(names, flat).batch(batch, True)


class Model:
    def __init__(self, network, loss_fn=None, optimizer=None, metrics=None, eval_network=None, eval_indexes=None,
                 amp_level="O0", boost_level="O0", **kwargs):
        if not isinstance(network, Cell):
            raise _C.InvalidArgument(f"Model: network is a Cell, not {type(network).__name__}")
        if optimizer is not None and not isinstance(optimizer, Optimizer):
            raise _C.InvalidArgument(f"Model: optimizer is an nn optimizer, not {type(optimizer).__name__}")
        self._network = network
        self._loss = loss_fn
        self._optimizer = optimizer
        if isinstance(network, PipelineCell):
            if loss_fn is not None or optimizer is None:
                raise _C.InvalidArgument("Model: a PipelineCell holds its loss; give it the optimizer only")
            self._model = _C.Model.pipeline(network._pipe, optimizer._opt)
            return
        self._model = _C.Model(network._cell, _loss(loss_fn), optimizer._opt if optimizer is not None else None)

    def train(self, epoch, train_dataset, callbacks=None, dataset_sink_mode=False, sink_size=-1, initial_epoch=0):
        """Trains epochs initial_epoch+1 .. epoch (dataset_sink_mode is accepted: the whole step runs
        in C++ either way)."""
        sys.stdout.flush()
        self._model.train(int(epoch), _batched(train_dataset), _callbacks(callbacks), int(initial_epoch))
        sys.stdout.flush()

    def eval(self, valid_dataset, callbacks=None, dataset_sink_mode=False):
        """{'accuracy': fraction of rows whose argmax matches the label}."""
        return {"accuracy": self._model.eval_accuracy(_dataset(valid_dataset, "Model.eval"))}

    @property
    def train_network(self):
        return self._network
