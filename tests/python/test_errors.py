"""Errors raised in C++ arrive as Python exceptions of matching types, and what tracing cannot
capture is refused naming the line."""
import os
import textwrap

import numpy as np
import pytest

import shardflow as ms
from shardflow import nn, ops

from conftest import BUILD, PYTHON, run


class Net(nn.Cell):
    def __init__(self, body):
        super().__init__()
        self.fc = nn.Dense(4, 3)
        self.body = body

    def construct(self, x):
        return self.body(self, x)


def grad_of(body):
    net = Net(body)
    loss = nn.MSELoss()
    return ms.value_and_grad(lambda x, y: loss(net(x), y), None, net.trainable_params())


def data():
    return np.ones((2, 4), np.float32), np.zeros((2, 3), np.float32)


def test_python_if_on_a_traced_tensor_names_its_line():
    def body(self, x):
        y = self.fc(x)
        if y:  # the line the error names
            return y
        return y
    line = body.__code__.co_firstlineno + 2
    with pytest.raises(ms.TraceError, match=rf"test_errors.py:{line}: bool\(\)/if/while of a traced tensor"):
        grad_of(body)(*data())


def test_a_comparison_of_a_traced_tensor_is_refused():
    def body(self, x):
        return self.fc(x) if x.shape[0] > 1 and x > 0 else x  # x.shape is fine, x > 0 is not
    with pytest.raises(ms.TraceError, match=r"a comparison \(>\)"):
        grad_of(body)(*data())


def test_a_shape_mismatch_is_a_value_error_naming_the_op():
    def body(self, x):
        return self.fc(x)
    with pytest.raises(ValueError, match=r"MatMul|Dense|shape"):
        grad_of(body)(np.ones((2, 5), np.float32), np.zeros((2, 3), np.float32))


def test_a_tensor_kept_from_an_earlier_trace_is_refused():
    kept = []

    def body(self, x):
        kept.append(x)
        return self.fc(kept[0])
    grad = grad_of(body)
    grad(*data())
    with pytest.raises(ValueError, match="earlier trace"):
        grad(np.ones((3, 4), np.float32), np.zeros((3, 3), np.float32))  # a new shape: traced again


def test_a_bad_strategy_is_a_value_error():
    with pytest.raises(ValueError, match="not an int"):
        ops.MatMul().shard(((2, "a"), (1, 1)))
    with pytest.raises(ValueError, match="one entry per input"):
        ops.MatMul().shard(4)


def test_an_op_outside_a_construct_is_refused():
    with pytest.raises(ValueError, match="inside a Cell's construct"):
        ops.MatMul()(ms.Tensor(np.ones((2, 2), np.float32)), ms.Tensor(np.ones((2, 2), np.float32)))


def test_error_types():
    assert issubclass(ms.InvalidArgument, ValueError) and issubclass(ms.InvalidArgument, ms.Error)
    assert issubclass(ms.ShapeError, ms.InvalidArgument)
    assert issubclass(ms.IoError, OSError)
    assert issubclass(ms.Error, RuntimeError)
    with pytest.raises(OSError, match="no-such-dir"):
        ms.dataset.MnistDataset("/no-such-dir")


def test_a_lost_peer_is_peer_lost_with_its_rank(tmp_path):
    script = tmp_path / "lose_a_rank.py"
    script.write_text(textwrap.dedent("""
        import os
        import numpy as np
        import shardflow as ms
        from shardflow.communication import init, get_rank
        init()
        if get_rank() == 1:
            os._exit(0)  # leaves without a word (exit 0: sfrun lets the others run on)
        try:
            ms.ops.AllReduce()(ms.Tensor(np.ones(4, np.float32)))
        except ms.PeerLost as e:
            print(f"PeerLost rank={e.rank}: {e}", flush=True)
            os._exit(0)
        print("no error", flush=True)
    """))
    sfrun = os.path.join(BUILD, "tools", "sfrun", "sfrun")
    import subprocess
    from conftest import python_env
    p = subprocess.run([sfrun, "-n", "2", "--", PYTHON, str(script), "--comm-timeout", "10"], cwd=str(tmp_path),
                       env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    log = (tmp_path / "log_output" / "1" / "rank.0" / "stdout").read_text()
    assert "PeerLost rank=1" in log, p.stdout + log
