"""Callbacks (mindspore.train.callback). LossMonitor, TimeMonitor and ModelCheckpoint run in C++;
a Python Callback subclass is called from the thread that runs the step, with the GIL taken
there (the training call itself releases it), so it may run from any Python thread."""
from .. import _shardflow as _C


class _CbParams:
    """What run_context.original_args() returns: cur_epoch_num, cur_step_num, batch_num, epoch_num,
    net_outputs (the step's loss as a Tensor)."""

    def __init__(self, fields):
        self.__dict__.update(fields)


class RunContext:
    def __init__(self, cb_params):
        self._params = cb_params
        self._stop = False

    def original_args(self):
        return self._params

    def request_stop(self):
        raise _C.InvalidArgument("RunContext.request_stop is not supported: train for fewer epochs")

    def get_stop_requested(self):
        return self._stop


class Callback:
    """Subclass and override the events: on_train_begin, on_train_epoch_begin, on_train_step_end,
    on_train_epoch_end, on_train_end (or the older begin, epoch_begin, step_end, epoch_end, end)."""

    def _sf_event(self, event, fields):
        getattr(self, event)(RunContext(_CbParams(fields)))

    def on_train_begin(self, run_context):
        self.begin(run_context)

    def on_train_epoch_begin(self, run_context):
        self.epoch_begin(run_context)

    def on_train_step_end(self, run_context):
        self.step_end(run_context)

    def on_train_epoch_end(self, run_context):
        self.epoch_end(run_context)

    def on_train_end(self, run_context):
        self.end(run_context)

    def begin(self, run_context):
        pass

    def epoch_begin(self, run_context):
        pass

    def step_end(self, run_context):
        pass

    def epoch_end(self, run_context):
        pass

    def end(self, run_context):
        pass


class _Native:
    """A callback that runs in C++."""

    def __init__(self, cxx):
        self._cxx = cxx


class LossMonitor(_Native):
    """Prints "epoch: E step: S, loss is L" every per_print_times steps (through the rank's log)."""

    def __init__(self, per_print_times=1):
        if isinstance(per_print_times, bool) or not isinstance(per_print_times, int) or per_print_times < 1:
            raise _C.InvalidArgument(f"LossMonitor: per_print_times {per_print_times!r} is not an int >= 1")
        super().__init__(_C.LossMonitor(per_print_times))


class TimeMonitor(_Native):
    def __init__(self, data_size=None):
        super().__init__(_C.TimeMonitor())


class CheckpointConfig:
    """How often ModelCheckpoint saves: every save_checkpoint_steps steps (None: at each epoch's end)."""

    def __init__(self, save_checkpoint_steps=None, save_checkpoint_seconds=0, keep_checkpoint_max=5,
                 keep_checkpoint_per_n_minutes=0, integrated_save=True, async_save=False, **kwargs):
        self.save_checkpoint_steps = save_checkpoint_steps
        self.keep_checkpoint_max = keep_checkpoint_max


class ModelCheckpoint(_Native):
    """Saves the network's parameters to directory/prefix-<epoch>_<step>.ckpt."""

    def __init__(self, prefix="CKP", directory=None, config=None):
        steps = 0 if config is None or config.save_checkpoint_steps is None else int(config.save_checkpoint_steps)
        super().__init__(_C.ModelCheckpoint(prefix, "." if directory is None else str(directory), steps))

    @property
    def saved(self):
        return self._cxx.saved
