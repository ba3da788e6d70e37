"""Layout: a device matrix with a name per axis (mindspore.Layout). ``layout("mp", ("sp", "dp"))``
gives one tensor's layout: each dim mapped to axes, "None" for a dim not split."""
from .. import _shardflow as _C


def Layout(device_matrix, alias_name, rank_list=None):  # noqa: N802 - MindSpore's name
    if rank_list is not None:
        raise _C.InvalidArgument("Layout: rank_list is not supported")
    return _C.Layout(list(device_matrix), list(alias_name))
