"""Layout: a device matrix with a name per axis (mindspore.Layout). ``layout("mp", ("sp", "dp"))``
gives one tensor's layout: each dim mapped to axes, "None" for a dim not split."""
from .. import _shardflow as _C


def Layout(device_matrix, alias_name=None, rank_list=None, name=None):  # noqa: N802 - MindSpore's name
    """``Layout((2, 2, 2), ("dp", "sp", "mp"))``; the names may also be given as ``name=``."""
    if alias_name is None:
        alias_name = name
    if alias_name is None:
        raise _C.InvalidArgument("Layout: give a name for every axis of the device matrix (alias_name)")
    if rank_list is not None:
        raise _C.InvalidArgument("Layout: rank_list is not supported")
    return _C.Layout(list(device_matrix), list(alias_name))
