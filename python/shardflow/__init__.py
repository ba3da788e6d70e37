"""shardflow: MindSpore's distributed-parallel training on shardflow's C++ actor runtime.

Programs written for MindSpore run with their imports changed (``import shardflow as
mindspore``): a Cell's ``construct`` is traced once into shardflow's graph, and the training
step then runs in C++ with the GIL released. docs/python.md lists what differs.
"""
from . import _shardflow as _C
from ._shardflow import (Error, InvalidArgument, IoError, NotFound, PeerLost, ShapeError)
from .common.tensor import Tensor, float32, int32, dtype
from .common.parameter import Parameter
from .common.initializer import initializer
from .common.trace import TraceError
from .context import (GRAPH_MODE, PYNATIVE_MODE, ParallelMode, get_auto_parallel_context, get_context,
                      reset_auto_parallel_context, set_auto_parallel_context, set_context)
from .ops.layout import Layout
from .common.seed import get_seed, set_seed
from .common.grad import value_and_grad, grad, jit
from .train.model import Model
from .train.elastic import train_elastic
from .train.serialization import load_checkpoint, load_param_into_net, save_checkpoint
from . import context, nn, ops, communication, dataset, train, common

__version__ = "0.1.0"

__all__ = [
    "Tensor", "Parameter", "float32", "int32", "dtype", "initializer", "set_seed", "get_seed",
    "set_context", "get_context", "GRAPH_MODE", "PYNATIVE_MODE", "ParallelMode", "set_auto_parallel_context",
    "get_auto_parallel_context", "reset_auto_parallel_context", "Layout", "value_and_grad", "grad", "jit", "Model",
    "save_checkpoint", "load_checkpoint", "load_param_into_net", "Error", "InvalidArgument", "ShapeError",
    "NotFound", "IoError", "PeerLost", "TraceError",
]
