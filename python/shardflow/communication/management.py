"""init, ranks and groups (mindspore.communication.management)."""
import atexit
import sys

from .. import _shardflow as _C


class GlobalComm:
    """The world group's names: MindSpore's backends' names all mean shardflow's "world"."""
    WORLD_COMM_GROUP = "world"
    BACKEND = "shardflow"
    INITED = False


HCCL_WORLD_COMM_GROUP = "hccl_world_group"
NCCL_WORLD_COMM_GROUP = "nccl_world_group"
_WORLD_NAMES = {None, "world", HCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP, "mccl_world_group"}


def _group(group):
    return "world" if group in _WORLD_NAMES else group


def init(backend_name=None):
    """Starts the job: the ranks come from sfrun, mpirun, Slurm, or ``--devices N`` in sys.argv
    (taken out of it). The backend name ("hccl", "nccl", ...) is accepted and ignored: the
    transport is chosen by how the job was launched (docs/python.md). A second call, or a call in a
    rank started by ``python3 -m shardflow.launch``, does nothing."""
    if _C.initialized():
        return
    sys.argv[:] = _C.init(list(sys.argv))
    GlobalComm.INITED = True
    # Ends the job when the script ends (MPI must be finalized before the process exits).
    atexit.register(_release_at_exit)
    if _C.process_ranks() > 1 and not _C.has_rank():
        raise _C.InvalidArgument(
            "init: --devices N runs N ranks in one process, each on its own thread: start the script with "
            "python3 -m shardflow.launch --devices N script.py")


def release():
    _C.release()


def _release_at_exit():
    if _C.initialized():
        sys.stdout.flush()
        _C.release()


def get_rank(group=None):
    return _C.get_rank(_group(group))


def get_group_size(group=None):
    return _C.get_group_size(_group(group))


def get_local_rank(group=None):
    return _C.get_local_rank()


def get_local_rank_size(group=None):
    return _C.process_ranks() if _C.process_ranks() > 1 else 1


def create_group(group, rank_ids):
    _C.create_group(group, list(rank_ids))


def destroy_group(group):
    _C.destroy_group(group)


def get_world_rank_from_group_rank(group, group_rank_id):
    return _C.get_world_rank_from_group_rank(_group(group), group_rank_id)


def get_group_rank_from_world_rank(world_rank_id, group):
    return _C.get_group_rank_from_world_rank(world_rank_id, _group(group))
