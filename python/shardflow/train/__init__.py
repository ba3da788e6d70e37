"""mindspore.train: Model, callbacks, checkpoints."""
from . import callback
from .callback import (Callback, CheckpointConfig, LossMonitor, ModelCheckpoint, RunContext, TimeMonitor)
from .elastic import train_elastic
from .model import Model
from .serialization import load_checkpoint, load_param_into_net, save_checkpoint
