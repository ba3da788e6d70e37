"""What a traced tensor (a Symbol) does in Python: arithmetic and slicing add ops to the graph
being built; anything that needs its value while tracing (``if``, ``bool``, ``float``,
iteration, ``asnumpy``) is a TraceError naming the line, since the graph is built once and runs
without Python."""
import sys

from .. import _shardflow as _C

Symbol = _C.Symbol


class TraceError(_C.Error):
    """Python code in a construct that tracing cannot capture (control flow on a traced value)."""


def _caller():
    f = sys._getframe(2)
    return f"{f.f_code.co_filename}:{f.f_lineno}"


def _refuse(what):
    def refuse(self, *args):
        raise TraceError(f"{_caller()}: {what} of a traced tensor: construct is traced once into a graph, so its "
                         "Python control flow cannot depend on tensor values (use ops instead)")
    return refuse


def _binary(op, reverse=False):
    def apply(self, other):
        if not isinstance(other, (Symbol, int, float)) and not isinstance(other, _C.Parameter):
            return NotImplemented
        a, b = (other, self) if reverse else (self, other)
        return _C.op(op, [a, b])
    return apply


def _norm_index(i, n, what):
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError(f"{what}: index out of range for a dim of {n}")
    return i


def _getitem(self, key):
    shape = self.shape
    if not isinstance(key, tuple):
        key = (key,)
    if len(key) > len(shape):
        raise _C.InvalidArgument(f"slicing a tensor of shape {shape} with {len(key)} indices")
    begin, end, strides, drop = [], [], [], []
    for d, k in enumerate(key):
        n = shape[d]
        if isinstance(k, slice):
            b, e, s = k.indices(n)
            if s <= 0:
                raise _C.InvalidArgument("slicing a traced tensor: steps must be positive")
            begin.append(b)
            end.append(max(e, b))
            strides.append(s)
        elif isinstance(k, int) and not isinstance(k, bool):
            i = _norm_index(k, n, "tensor index")
            begin.append(i)
            end.append(i + 1)
            strides.append(1)
            drop.append(d)
        else:
            raise TraceError(f"{_caller()}: a traced tensor is sliced by ints and slices (not {type(k).__name__})")
    # Only the dims up to the last one sliced, and strides only when one is not 1: x[a:b] is then
    # the op C++ code writes for it (a run of whole rows, which the kernel copies in one piece).
    while begin and begin[-1] == 0 and end[-1] == shape[len(begin) - 1] and strides[-1] == 1:
        begin.pop()
        end.pop()
        strides.pop()
    attrs = {"begin": begin, "end": end}
    if any(s != 1 for s in strides):
        attrs["strides"] = strides
    if not begin:
        y = self
    else:
        y = _C.op("StridedSlice", [self], attrs)
    if drop:
        out = [n for d, n in enumerate(y.shape) if d not in drop]
        y = _C.op("Reshape", [y], {"shape": out})
    return y


def _reshape(self, *shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return _C.op("Reshape", [self], {"shape": list(shape)})


Symbol.__add__ = _binary("Add")
Symbol.__radd__ = _binary("Add", True)
Symbol.__sub__ = _binary("Sub")
Symbol.__rsub__ = _binary("Sub", True)
Symbol.__mul__ = _binary("Mul")
Symbol.__rmul__ = _binary("Mul", True)
Symbol.__truediv__ = _binary("RealDiv")
Symbol.__rtruediv__ = _binary("RealDiv", True)
Symbol.__neg__ = lambda self: _C.op("Mul", [self, -1.0])
Symbol.__getitem__ = _getitem
Symbol.reshape = _reshape
Symbol.__bool__ = _refuse("bool()/if/while")
Symbol.__lt__ = _refuse("a comparison (<)")
Symbol.__le__ = _refuse("a comparison (<=)")
Symbol.__gt__ = _refuse("a comparison (>)")
Symbol.__ge__ = _refuse("a comparison (>=)")
Symbol.__float__ = _refuse("float()")
Symbol.__int__ = _refuse("int()")
Symbol.__index__ = _refuse("an index")
Symbol.__iter__ = _refuse("iteration")
Symbol.__len__ = _refuse("len()")
Symbol.asnumpy = _refuse("asnumpy()")
Symbol.__repr__ = lambda self: f"Tensor(shape={self.shape}, traced)"
