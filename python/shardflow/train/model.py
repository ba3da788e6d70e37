"""Model (mindspore.Model): trains a network with a loss and an optimizer. The network's
construct and the loss are traced once; each epoch then runs in the actor runtime with the GIL
released, and the callbacks are called after each step."""
import sys

from .. import _shardflow as _C
from ..nn.cell import Cell
from ..nn.loss import LossBase
from ..nn.optim import Optimizer
from ..nn.wrap import PipelineCell


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
    return [getattr(c, "_cxx", c) for c in callbacks]


def _batched(dataset):
    """Rows that are whole batches (a GeneratorDataset's, unbatched) train one step per row."""
    d = dataset._d
    if d.batch_size:
        return d
    if not getattr(dataset, "_row_batches", False):
        raise _C.InvalidArgument("Model.train: the dataset is not batched (call .batch(n))")
    cols = [t for t in next(iter(d.next_epoch()))]
    d.set_epoch(0)
    rows = d.num_rows
    batch = cols[0].shape[0] if cols[0].ndim else 1
    names = d.get_col_names()
    import numpy as np
    full = []
    for c, name in enumerate(names):
        parts = [row[c].asnumpy() for row in d.next_epoch()]
        d.set_epoch(0)
        arr = np.concatenate([p.reshape((batch,) + p.shape[1:]) for p in parts]) if cols[c].ndim else np.stack(parts)
        full.append(arr)
    return _C.Dataset.from_columns(names, full).batch(batch, True) if rows else d


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
        return {"accuracy": self._model.eval_accuracy(valid_dataset._d)}

    @property
    def train_network(self):
        return self._network
