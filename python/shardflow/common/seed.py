"""The global seed: parameter initialisation, shuffles and dropout draw from it."""
from .. import _shardflow as _C


def set_seed(seed):
    """Sets the global seed (MindSpore's set_seed)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise _C.InvalidArgument(f"set_seed: seed {seed!r} is not a non-negative int")
    _C.set_seed(seed)


def get_seed():
    """The global seed."""
    return _C.get_seed()
