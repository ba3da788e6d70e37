"""initializer(): a parameter's shape and how to fill it, filled when the network is named."""
from .. import _shardflow as _C


class Initializer:
    """What ``initializer(init, shape, dtype)`` returns: given to ``Parameter``."""

    def __init__(self, init, shape, dtype=None):
        if not isinstance(init, str):
            init = getattr(init, "_sf_init", None)
            if init is None:
                raise _C.InvalidArgument("initializer: init is a name ('normal', 'zeros', 'ones', 'he_normal', ...)")
        if isinstance(shape, int):
            shape = [shape]
        shape = list(shape)
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise _C.InvalidArgument(f"initializer: shape {shape!r} is not a list of non-negative ints")
        if dtype is not None and dtype != _C.DType.float32:
            raise _C.InvalidArgument("initializer: parameters are float32")
        self.init = init
        self.shape = shape


def initializer(init, shape=None, dtype=None):
    """MindSpore's initializer: ``initializer("normal", [784, 512], ms.float32)``."""
    return Initializer(init, shape if shape is not None else [], dtype)


class _Named:
    def __init__(self, name):
        self._sf_init = name


def Normal(sigma=0.01):  # noqa: N802 - MindSpore's name
    """The 'normal' initializer (sigma 0.01, as MindSpore's default)."""
    if sigma != 0.01:
        raise _C.InvalidArgument("Normal: only sigma=0.01 ('normal') is available")
    return _Named("normal")


def Zero():  # noqa: N802
    return _Named("zeros")


def One():  # noqa: N802
    return _Named("ones")


def HeNormal():  # noqa: N802
    return _Named("he_normal")
