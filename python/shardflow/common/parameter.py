"""Parameter: a cell's trainable tensor. ``Parameter(initializer("normal", [784, 512]), "w")``;
the name defaults to the attribute it is assigned to, prefixed by the cells above it."""
from .. import _shardflow as _C
from .initializer import Initializer


def _parameter(default_input, name=None, requires_grad=True, layerwise_parallel=False, parallel_optimizer=True):
    if isinstance(default_input, Initializer):
        p = _C.Parameter(default_input.shape, default_input.init, requires_grad)
    else:
        raise _C.InvalidArgument(
            "Parameter: default_input is an initializer(...) (a Tensor or numpy value is not supported yet: "
            "load it with load_param_into_net after the network is built)")
    if name is not None and not isinstance(name, str):
        raise _C.InvalidArgument(f"Parameter: name {name!r} is not a string")
    p._given_name = name
    return p


class _ParameterType(type):
    """Makes ``Parameter(...)`` build the C++ parameter and ``isinstance(p, Parameter)`` true for it."""

    def __call__(cls, *args, **kwargs):
        return _parameter(*args, **kwargs)

    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.Parameter)


class Parameter(metaclass=_ParameterType):
    """MindSpore's Parameter (see the module's docstring)."""


def _asnumpy(self):
    return self._value().asnumpy()


_C.Parameter.asnumpy = _asnumpy
_C.Parameter.__repr__ = lambda self: f"Parameter (name={self.name}, shape={self.shape}, dtype=Float32, requires_grad={self.requires_grad})"
