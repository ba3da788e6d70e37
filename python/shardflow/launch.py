"""Virtual devices for a Python script: ``python3 -m shardflow.launch --devices N script.py [args]``
runs the script N times in this process, once per rank, each on its own thread bound to its rank
(as ``--devices N`` runs a C++ example). The script's ``init()`` then finds its rank started.
Each rank's standard output goes to log_output/<job>/rank.<r>/stdout, as sfrun and msrun lay it
out; rank 0's also to this process's stdout."""
import argparse
import os
import runpy
import sys
import threading

from . import _shardflow as _C

_local = threading.local()


class _RankStdout:
    """sys.stdout for the ranks' threads: whole lines go to the log sink, which writes each to its
    rank's file (and rank 0's to the terminal), as the C++ LossMonitor's lines go."""

    def __init__(self, real):
        self._real = real

    def write(self, s):
        if getattr(_local, "rank", None) is None:
            return self._real.write(s)
        pending = getattr(_local, "pending", "") + s
        *lines, _local.pending = pending.split("\n")
        for line in lines:
            _C.log_line(line)
        return len(s)

    def flush(self):
        if getattr(_local, "rank", None) is None:
            self._real.flush()

    def __getattr__(self, name):
        return getattr(self._real, name)


# numpy's and Python's module-level random functions draw from one global state per process. The
# ranks of virtual devices share a process, so each rank thread gets its own state, as each
# rank of sfrun or mpirun has its own process: np.random.seed(1) then rand() gives every rank
# the same numbers, whichever order the threads run in.
_NUMPY_RANDOM = ("seed", "rand", "randn", "randint", "random", "random_sample", "sample", "ranf", "normal",
                 "uniform", "standard_normal", "shuffle", "permutation", "choice", "get_state", "set_state")
_PYTHON_RANDOM = ("seed", "random", "uniform", "randint", "randrange", "choice", "choices", "shuffle", "sample",
                  "gauss", "normalvariate", "getstate", "setstate", "getrandbits")


def _per_rank_random():
    import random

    import numpy.random as npr

    states = threading.local()

    def numpy_state():
        if not hasattr(states, "numpy"):
            states.numpy = npr.RandomState()
        return states.numpy

    def python_state():
        if not hasattr(states, "python"):
            states.python = random.Random()
        return states.python

    for name in _NUMPY_RANDOM:
        setattr(npr, name, lambda *a, _n=name, **k: getattr(numpy_state(), _n)(*a, **k))
    for name in _PYTHON_RANDOM:
        setattr(random, name, lambda *a, _n=name, **k: getattr(python_state(), _n)(*a, **k))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m shardflow.launch",
                                     description="Runs a script on N virtual devices (one thread per rank).")
    parser.add_argument("--devices", type=int, required=True, help="ranks in this process")
    parser.add_argument("--log-dir", default="log_output", help="where each rank's stdout goes")
    parser.add_argument("--log-ranks", default="rank0", choices=["rank0", "all", "files"],
                        help="which ranks' lines also reach this process's stdout")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    a = parser.parse_args(argv)
    if a.devices < 1:
        parser.error(f"--devices {a.devices}: at least 1")
    if not os.path.isfile(a.script):
        parser.error(f"{a.script}: no such file")
    _C.init([sys.argv[0], "--devices", str(a.devices)])
    if a.devices > 1:
        _per_rank_random()
    job = _C.new_job_dir(a.log_dir)
    _C.set_log_ranks(a.log_ranks, job)
    real = sys.stdout
    sys.stdout = _RankStdout(real)
    sys.argv = [a.script] + a.args
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.script)))

    def rank_main():
        _local.rank = _C.get_rank()
        try:
            runpy.run_path(a.script, run_name="__main__")
        finally:
            if getattr(_local, "pending", ""):
                _C.log_line(_local.pending)
                _local.pending = ""

    try:
        _C.run_ranks(rank_main)
    finally:
        sys.stdout = real
        _C.release()
    if a.devices > 1:
        print(f"{a.devices} devices: logs in {job}")


if __name__ == "__main__":
    main()
