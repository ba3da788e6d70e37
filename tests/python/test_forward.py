"""A cell called on concrete tensors runs forward: its construct traced once per input shape
into a graph that runs in C++, the result a Tensor."""
import numpy as np
import pytest

import shardflow as ms
from shardflow import nn


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 3)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.fc(x)) * 2.0


def test_a_cell_runs_forward_on_numpy_and_tensors():
    ms.set_seed(1)
    net = Net()
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
    y = net(ms.Tensor(x))
    w, b = net.fc.weight.asnumpy(), net.fc.bias.asnumpy()
    assert y.shape == (2, 3)
    assert np.allclose(y.asnumpy(), np.maximum(x @ w.T + b, 0) * 2.0, atol=1e-6)
    assert np.array_equal(net(x).asnumpy(), y.asnumpy())
    assert net(np.ones((5, 4), np.float32)).shape == (5, 3)  # another shape: traced again


def test_the_result_is_the_callers():
    net = Net()
    a = net(np.ones((2, 4), np.float32))
    first = a.asnumpy().copy()
    net(np.zeros((2, 4), np.float32))
    assert np.array_equal(a.asnumpy(), first)  # not overwritten by the next call


def test_forward_is_refused_where_parameters_are_sharded():
    net = Net()
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.SEMI_AUTO_PARALLEL)
    try:
        with pytest.raises(ValueError, match="Model.eval"):
            net(np.ones((2, 4), np.float32))
    finally:
        ms.reset_auto_parallel_context()
