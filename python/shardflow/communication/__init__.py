"""mindspore.communication: init, get_rank, get_group_size, groups (management)."""
from . import management
from .management import (GlobalComm, create_group, destroy_group, get_group_rank_from_world_rank, get_group_size,
                         get_local_rank, get_local_rank_size, get_rank, get_world_rank_from_group_rank, init, release)
