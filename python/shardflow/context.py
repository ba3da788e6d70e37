"""set_context and set_auto_parallel_context (mindspore.context). set_context's device and
graph-mode options are accepted and have no effect: shardflow always builds a graph and runs
it on CPU processes (docs/python.md)."""
from . import _shardflow as _C

GRAPH_MODE = 0
PYNATIVE_MODE = 1

_context = {"mode": GRAPH_MODE, "device_target": "CPU"}
# Accepted for MindSpore programs; shardflow has one mode and one device kind.
_accepted = {"mode", "device_target", "device_id", "max_device_memory", "save_graphs", "save_graphs_path",
             "max_call_depth", "enable_graph_kernel", "runtime_num_threads", "jit_config", "memory_optimize_level"}


class ParallelMode:
    """The parallel modes' names (mindspore.ParallelMode)."""
    STAND_ALONE = "stand_alone"
    DATA_PARALLEL = "data_parallel"
    HYBRID_PARALLEL = "hybrid_parallel"
    SEMI_AUTO_PARALLEL = "semi_auto_parallel"
    AUTO_PARALLEL = "auto_parallel"


def set_context(**kwargs):
    """Records the options; save_graphs / save_graphs_path also set the parallel IR dumps."""
    for key in kwargs:
        if key not in _accepted:
            raise _C.InvalidArgument(f"set_context: no option '{key}'")
    _context.update(kwargs)
    if "save_graphs" in kwargs:
        _C.set_auto_parallel_context(save_graphs=bool(kwargs["save_graphs"]))
    if "save_graphs_path" in kwargs:
        _C.set_auto_parallel_context(save_graphs_path=str(kwargs["save_graphs_path"]))


def get_context(key):
    """The value set_context recorded."""
    if key not in _context:
        raise _C.InvalidArgument(f"get_context: no option '{key}'")
    return _context[key]


# MindSpore options that shardflow takes as given: device_num is the job's size, the others
# choose behaviour shardflow has no alternative to.
_ignored = {"device_num", "global_rank", "parameter_broadcast", "enable_parallel_optimizer", "all_reduce_fusion_config",
            "comm_fusion", "strategy_ckpt_config", "auto_parallel_search_mode"}


def set_auto_parallel_context(**kwargs):
    """MindSpore's set_auto_parallel_context (parallel/context.h has the fields)."""
    kwargs = {k: v for k, v in kwargs.items() if k not in _ignored}
    if "dataset_strategy" in kwargs and not isinstance(kwargs["dataset_strategy"], str):
        raise _C.InvalidArgument("set_auto_parallel_context: dataset_strategy is 'data_parallel' or 'full_batch' "
                                 "(per-input tuples are not supported)")
    _C.set_auto_parallel_context(**kwargs)


def get_auto_parallel_context(attr_key):
    return _C.get_auto_parallel_context(attr_key)


def reset_auto_parallel_context():
    _C.reset_auto_parallel_context()
