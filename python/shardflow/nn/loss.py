"""Losses (mindspore.nn.loss): cells called with (logits, labels)."""
from .. import _shardflow as _C
from .cell import Cell


class LossBase(Cell):
    """A loss backed by shardflow's C++ loss function."""
    _leaf = True

    def __init__(self, fn):
        object.__setattr__(self, "_cell", _C.LossCell(fn))
        object.__setattr__(self, "_children", {})

    @property
    def _loss_fn(self):
        return self._cell.fn

    def __call__(self, logits, labels):
        if not _C.in_trace():
            return self._eager(logits, labels)
        return _C.call_loss(self._cell, logits, labels)


def _check_reduction(who, reduction):
    if reduction != "mean":
        raise _C.InvalidArgument(f"{who}: reduction '{reduction}' is not supported (only 'mean')")


class CrossEntropyLoss(LossBase):
    """Softmax cross entropy of logits against int32 class labels, averaged over the batch."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        if weight is not None or label_smoothing != 0.0:
            raise _C.InvalidArgument("CrossEntropyLoss: weight and label_smoothing are not supported")
        _check_reduction("CrossEntropyLoss", reduction)
        super().__init__(_C.CrossEntropyLoss())


class SoftmaxCrossEntropyWithLogits(LossBase):
    """With sparse=True (int32 labels) and reduction='mean': CrossEntropyLoss."""

    def __init__(self, sparse=False, reduction="none"):
        if not sparse or reduction != "mean":
            raise _C.InvalidArgument("SoftmaxCrossEntropyWithLogits: only sparse=True, reduction='mean'")
        super().__init__(_C.CrossEntropyLoss())


class MSELoss(LossBase):
    """Mean squared error."""

    def __init__(self, reduction="mean"):
        _check_reduction("MSELoss", reduction)
        super().__init__(_C.MSELoss())
