"""The collectives as ops (mindspore.ops.AllReduce, ...). Inside a construct they add their op
to the graph, which runs them in the actor runtime with the step; on concrete tensors they
run at once (with the GIL released)."""
from .. import _shardflow as _C
from .management import _group


class ReduceOp:
    SUM = "sum"
    PROD = "prod"
    MAX = "max"
    MIN = "min"


class _Collective:
    def __init__(self, kind, group=None):
        self._kind = kind
        self._group = _group(group)

    def __repr__(self):
        return f"Prim[{self._kind}]"


class AllReduce(_Collective):
    def __init__(self, op=ReduceOp.SUM, group=None):
        super().__init__("AllReduce", group)
        self._op = op

    def __call__(self, x):
        if _C.in_trace():
            return _C.traced_collective("AllReduce", x, self._group, self._op)
        return _C.all_reduce(x, self._op, self._group)


class AllGather(_Collective):
    def __init__(self, group=None):
        super().__init__("AllGather", group)

    def __call__(self, x):
        if _C.in_trace():
            return _C.traced_collective("AllGather", x, self._group)
        return _C.all_gather(x, self._group)


class ReduceScatter(_Collective):
    def __init__(self, op=ReduceOp.SUM, group=None):
        super().__init__("ReduceScatter", group)
        self._op = op

    def __call__(self, x):
        if _C.in_trace():
            return _C.traced_collective("ReduceScatter", x, self._group, self._op)
        raise _C.InvalidArgument("ReduceScatter on concrete tensors: call it inside a construct")


class Broadcast(_Collective):
    def __init__(self, root_rank, group=None):
        super().__init__("Broadcast", group)
        self._root = int(root_rank)

    def __call__(self, x):
        single = not isinstance(x, (tuple, list))
        xs = [x] if single else list(x)
        if _C.in_trace():
            out = [_C.traced_collective("Broadcast", t, self._group, root=self._root) for t in xs]
        else:
            out = [_C.broadcast(t, self._root, self._group) for t in xs]
        return out[0] if single else tuple(out)


class AlltoAll(_Collective):
    def __init__(self, split_count, split_dim, concat_dim, group=None):
        super().__init__("AlltoAll", group)
        self._split = [int(split_count), int(split_dim), int(concat_dim)]

    def __call__(self, x):
        if _C.in_trace():
            return _C.traced_collective("AlltoAll", x, self._group, split=self._split)
        raise _C.InvalidArgument("AlltoAll on concrete tensors: call it inside a construct")
