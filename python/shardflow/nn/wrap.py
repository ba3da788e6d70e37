"""Wrappers: DistributedGradReducer, WithLossCell, PipelineCell."""
from .. import _shardflow as _C
from .cell import Cell


class DistributedGradReducer:
    """AllReduces gradients over the data-parallel group (mean per the parallel context's
    gradients_mean unless given), with the GIL released."""

    def __init__(self, parameters, mean=None, degree=None, fusion_type=1, group=None):
        self._reducer = _C.DistributedGradReducer(list(parameters), mean, degree)

    def __call__(self, grads):
        return self._reducer(list(grads))


class WithLossCell(Cell):
    """The network followed by the loss: construct(data, label) = loss(backbone(data), label)."""

    def __init__(self, backbone, loss_fn):
        super().__init__()
        self._backbone = backbone
        self._loss = loss_fn

    def construct(self, data, label):
        return self._loss(self._backbone(data), label)

    @property
    def backbone_network(self):
        return self._backbone


class PipelineCell(Cell):
    """A WithLossCell split into micro_size micro-batches per step (pipeline parallel)."""

    def __init__(self, network, micro_size):
        if not isinstance(network, WithLossCell):
            raise _C.InvalidArgument("PipelineCell: the network is an nn.WithLossCell(net, loss)")
        if isinstance(micro_size, bool) or not isinstance(micro_size, int) or micro_size < 1:
            raise _C.InvalidArgument(f"PipelineCell: micro_size {micro_size!r} is not a positive int")
        super().__init__()
        self._network = network
        self._micro_size = micro_size
        from ..train.model import _loss
        self._pipe = _C.PipelineCell(network._backbone._cell, _loss(network._loss), micro_size)
