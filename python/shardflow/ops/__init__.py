"""mindspore.ops: primitives with ``.shard()``, the collectives, Layout."""
from .. import _shardflow as _C
from .layout import Layout
from .primitive import Primitive
from ..communication._ops import (AllGather, AllReduce, AlltoAll, Broadcast, ReduceOp, ReduceScatter)


def _axis(axis):
    if axis is None or axis == ():
        return []
    if isinstance(axis, int):
        return [axis]
    return list(axis)


class MatMul(Primitive):
    def __init__(self, transpose_a=False, transpose_b=False):
        super().__init__("MatMul", transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))


class BatchMatMul(Primitive):
    def __init__(self, transpose_a=False, transpose_b=False):
        super().__init__("BatchMatMul", transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))


def _op(name, doc):
    """A primitive without attributes, named as its graph op."""
    return type(name, (Primitive,), {"__init__": lambda self: Primitive.__init__(self, name), "__doc__": doc,
                                     "__module__": __name__})


ReLU = _op("ReLU", "max(x, 0).")
GeLU = _op("GeLU", "The GELU activation (tanh approximation).")
Flatten = _op("Flatten", "All dims but the first into one.")
Add = _op("Add", "a + b, with numpy broadcasting.")
Sub = _op("Sub", "a - b, with numpy broadcasting.")
Mul = _op("Mul", "a * b, with numpy broadcasting.")
RealDiv = _op("RealDiv", "a / b, with numpy broadcasting.")
Div = RealDiv
BiasAdd = _op("BiasAdd", "x + bias along the channel dim.")


class Softmax(Primitive):
    def __init__(self, axis=-1):
        super().__init__("Softmax", axis=int(axis if isinstance(axis, int) else axis[0]))


class _Reduce(Primitive):
    def __init__(self, op, keep_dims=False):
        super().__init__(op, keep_dims=bool(keep_dims))

    def _call_attrs(self, args):
        if len(args) == 2:
            return [args[0]], {"axis": _axis(args[1])}
        return list(args), {"axis": []}


class ReduceMean(_Reduce):
    def __init__(self, keep_dims=False):
        super().__init__("ReduceMean", keep_dims)


class ReduceSum(_Reduce):
    def __init__(self, keep_dims=False):
        super().__init__("ReduceSum", keep_dims)


class Reshape(Primitive):
    def __init__(self):
        super().__init__("Reshape")

    def _call_attrs(self, args):
        return [args[0]], {"shape": list(args[1])}


class Transpose(Primitive):
    def __init__(self):
        super().__init__("Transpose")

    def _call_attrs(self, args):
        return [args[0]], {"perm": list(args[1])}


class Squeeze(Primitive):
    """Drops size-1 dims (all of them, or those of ``axis``): a Reshape of the traced shape."""

    def __init__(self, axis=()):
        super().__init__("Reshape")
        self._squeeze = _axis(axis)

    def _call_attrs(self, args):
        x = args[0]
        shape = list(x.shape)
        axes = [a % len(shape) for a in self._squeeze] or [d for d, n in enumerate(shape) if n == 1]
        for a in axes:
            if shape[a] != 1:
                raise _C.ShapeError(f"Squeeze: dim {a} of shape {tuple(shape)} is not 1")
        return [x], {"shape": [n for d, n in enumerate(shape) if d not in axes]}


def matmul(a, b):
    return _C.op("MatMul", [a, b])


def relu(x):
    return _C.op("ReLU", [x])


def reshape(x, shape):
    return _C.op("Reshape", [x], {"shape": list(shape)})


def flatten(x):
    return _C.op("Flatten", [x])


__all__ = ["Primitive", "Layout", "MatMul", "BatchMatMul", "ReLU", "GeLU", "Flatten", "Add", "Sub", "Mul",
           "RealDiv", "Div", "BiasAdd", "Softmax", "ReduceMean", "ReduceSum", "Reshape", "Transpose", "Squeeze",
           "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "AlltoAll", "ReduceOp", "matmul", "relu",
           "reshape", "flatten"]
