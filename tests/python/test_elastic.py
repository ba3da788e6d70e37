"""shardflow.train_elastic (docs/elastic.md, "Python"): a Python program whose Model.train runs
through train_elastic loses a rank under `sfrun --elastic` and goes on, and its loss lines are
bitwise those of the C++ example that the kill tests check against the restart oracle
(tests/elastic), killed at the same point: the rank SIGKILLs itself at the Nth step start
(SF_FAULT_AT, core/fault_point.h), so both runs roll back to the same step. Below the minimum the
survivors save where the script's stop_checkpoint_dir says."""
import os
import re
import subprocess
import textwrap

import pytest

from conftest import BUILD, PYTHON, python_env
from small_mnist import write_small_mnist

SFRUN = os.path.join(BUILD, "tools", "sfrun", "sfrun")
DATA_PARALLEL = os.path.join(BUILD, "examples", "data_parallel")
RANKS, BATCH, STEPS = 4, 16, 12

LOSS = re.compile(r"^epoch: (\d+) step: (\d+), loss is (\S+)$", re.M)
CHANGE = re.compile(r"shardflow elastic: generation 1: lost rank (\d+); .* rolled back to step (\d+)")

# data_parallel --api model, written with the Python package: seed 004's network, SGD 0.01, each
# rank's shard of the training set, batches of 16, built anew in every world.
SCRIPT = textwrap.dedent("""
    import os
    import shardflow as ms
    import shardflow.dataset as ds
    from shardflow import nn
    from shardflow.communication import init, get_rank, get_group_size
    from shardflow.train import LossMonitor

    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    init()
    ms.set_seed(1)

    class Network(nn.Cell):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.dense_relu_sequential = nn.SequentialCell(
                nn.Dense(28*28, 512, weight_init="normal", bias_init="zeros"), nn.ReLU(),
                nn.Dense(512, 512, weight_init="normal", bias_init="zeros"), nn.ReLU(),
                nn.Dense(512, 10, weight_init="normal", bias_init="zeros"))

        def construct(self, x):
            return self.dense_relu_sequential(self.flatten(x))

    def build(generation):
        data = ds.MnistDataset(os.environ["DATA_PATH"], num_shards=get_group_size(), shard_id=get_rank())
        data = data.map([ds.vision.Rescale(1.0 / 255.0, 0), ds.vision.Normalize(mean=(0.1307,), std=(0.3081,)),
                         ds.vision.HWC2CHW()], "image")
        data = data.map(ds.transforms.TypeCast(ms.int32), "label").batch(16, drop_remainder=True)
        net = Network()
        model = ms.Model(net, nn.CrossEntropyLoss(), nn.SGD(net.trainable_params(), 1e-2))
        return model, data, [LossMonitor(1)]

    model = ms.train_elastic(2, build, stop_checkpoint_dir=os.environ.get("STOP_DIR", "elastic_checkpoint"))
    print("trained: " + type(model).__name__)
""")


def sfrun(cmd, cwd, job, fault, extra_env=None, elastic=f"2:{RANKS}", expect_rc=0):
    env = python_env(SF_FAULT_AT=fault, **(extra_env or {}))
    p = subprocess.run([SFRUN, "-n", str(RANKS), "--elastic", elastic, "--job-id", job, "--timeout", "30", "--"]
                       + cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=240)
    assert (p.returncode == 0) == (expect_rc == 0), f"{job}: sfrun exited {p.returncode}:\n{p.stderr[-3000:]}"
    logs = {}
    for r in range(RANKS):
        with open(os.path.join(cwd, "log_output", job, f"rank.{r}", "stdout"), encoding="utf-8") as f:
            logs[r] = f.read()
    return p, logs


@pytest.mark.parametrize("victim", [0, 2])
def test_python_train_elastic_loses_a_rank_as_the_cxx_example_does(tmp_path, victim):
    data = write_small_mnist(str(tmp_path / "fashion"), RANKS * BATCH * STEPS, 100)
    (tmp_path / "elastic.py").write_text(SCRIPT)
    fault = f"step:{STEPS + 3}:{victim}"  # at the start of the second epoch's third step
    py, py_logs = sfrun([PYTHON, "elastic.py"], str(tmp_path), "py", fault, {"DATA_PATH": data})
    cxx, cxx_logs = sfrun([DATA_PARALLEL, "--api", "model", "--epochs", "2", "--batch", str(BATCH), "--print-every",
                           "1", "--data-dir", data], str(tmp_path), "cxx", fault)
    assert f"rank {victim} exited with signal 9" in py.stderr, py.stderr
    survivors = [r for r in range(RANKS) if r != victim]
    for r in survivors:
        change = CHANGE.search(py_logs[r])
        assert change and int(change.group(1)) == victim, f"python rank {r} printed no change losing {victim}"
        assert change.groups() == CHANGE.search(cxx_logs[r]).groups(), (py_logs[r], cxx_logs[r])
        py_losses, cxx_losses = LOSS.findall(py_logs[r]), LOSS.findall(cxx_logs[r])
        # Both epochs before the loss on 4 ranks, then the rest on 3: more lines than 4 ranks print.
        assert len(py_losses) > 2 * STEPS, py_logs[r]
        assert py_losses == cxx_losses, f"rank {r}: python and C++ loss lines differ"
        assert "trained: Model" in py_logs[r]


def test_python_survivors_below_min_save_where_stop_checkpoint_dir_says(tmp_path):
    """--elastic 4:4: a lost rank leaves 3, below the minimum; the survivors save the agreed step
    to the script's stop_checkpoint_dir and stop."""
    data = write_small_mnist(str(tmp_path / "fashion"), RANKS * BATCH * STEPS, 100)
    (tmp_path / "elastic.py").write_text(SCRIPT)
    stop_dir = tmp_path / "saved_at_stop"
    p, logs = sfrun([PYTHON, "elastic.py"], str(tmp_path), "below", "step:5:1",
                    {"DATA_PATH": data, "STOP_DIR": str(stop_dir)}, elastic=f"{RANKS}:{RANKS}", expect_rc=1)
    assert (stop_dir / "latest").is_file(), f"nothing committed to {stop_dir}:\n{p.stderr[-3000:]}"
    for r in (0, 2, 3):
        with open(tmp_path / "log_output" / "below" / f"rank.{r}" / "stderr", encoding="utf-8") as f:
            err = f.read()
        assert f"below the minimum of {RANKS}: stopped after saving step" in err and str(stop_dir) in err, err


def test_python_train_elastic_refuses_an_empty_stop_checkpoint_dir():
    import shardflow as ms
    with pytest.raises(ms.InvalidArgument, match="stop_checkpoint_dir is a directory's path"):
        ms.train_elastic(1, lambda generation: None, stop_checkpoint_dir="")
