"""save_checkpoint, load_checkpoint, load_param_into_net: shardflow's checkpoint files
(docs/checkpoint_format.md)."""
from .. import _shardflow as _C
from ..nn.cell import Cell


def save_checkpoint(save_obj, ckpt_file_name, **kwargs):
    if not isinstance(save_obj, Cell):
        raise _C.InvalidArgument("save_checkpoint: save_obj is a Cell")
    _C.save_checkpoint(save_obj._cell, str(ckpt_file_name))


def load_checkpoint(ckpt_file_name, net=None, strict_load=False, **kwargs):
    params = _C.load_checkpoint(str(ckpt_file_name))
    if net is not None:
        load_param_into_net(net, params, strict_load)
    return params


def load_param_into_net(net, parameter_dict, strict_load=False, **kwargs):
    """Returns (parameters the dict lacks, dict entries naming no parameter)."""
    return _C.load_param_into_net(net._cell, dict(parameter_dict), bool(strict_load))
