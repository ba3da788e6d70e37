"""Primitive ops: ``ops.MatMul().shard(((2, 4), (4, 1)))``. An op assigned to a cell attribute is
registered under that name, so its strategy applies to the nodes it adds (and the IR reads
"matmul1/MatMul"); called in a construct it adds its node to the graph being traced."""
from .. import _shardflow as _C


def _check_strategy(s, what):
    if s is None:
        return None
    if not isinstance(s, (tuple, list)):
        raise _C.InvalidArgument(f"{what}: a strategy is a tuple with one entry per input, not {type(s).__name__}")
    _C.to_strategies(s)  # refuses entries that are not tuples of ints or layouts, naming them
    return tuple(s)


class Primitive:
    """An op of the graph (mindspore.ops.Primitive)."""

    def __init__(self, op, **attrs):
        self._op = op
        self._attrs = attrs
        self._strategy = None
        self._bound = None

    def shard(self, in_strategy=None, out_strategy=None):
        """Splits the op's inputs (and optionally its output) over the devices; returns the op."""
        name = type(self).__name__
        self._strategy = (_check_strategy(in_strategy, f"{name}.shard in_strategy"),
                          _check_strategy(out_strategy, f"{name}.shard out_strategy"))
        if self._bound is not None:
            self._bound.shard(*self._strategy)
        return self

    def _bind(self, cxx):
        self._bound = cxx
        if self._strategy is not None:
            cxx.shard(*self._strategy)

    def _call_attrs(self, args):
        """Splits call arguments into graph inputs and per-call attributes."""
        return list(args), {}

    def __call__(self, *args):
        inputs, extra = self._call_attrs(args)
        if not _C.in_trace():
            return self._eager(inputs, extra)
        if self._bound is not None:
            return self._bound(*inputs, **extra)
        return _C.op(self._op, inputs, {**self._attrs, **extra})

    def _eager(self, inputs, extra):
        raise _C.InvalidArgument(f"ops.{type(self).__name__} on concrete tensors: call it inside a Cell's construct "
                                 "or a function given to value_and_grad")

    def __repr__(self):
        return f"Prim[{type(self).__name__}]"
