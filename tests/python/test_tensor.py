"""Tensors cross between numpy and shardflow without copies, both ways."""
import gc

import numpy as np
import pytest

import shardflow as ms


def test_tensor_from_numpy_shares_memory():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ms.Tensor(a)
    assert t._address() == a.ctypes.data
    a[1, 2] = 99.0  # a write through numpy is seen by the tensor
    assert t.asnumpy()[1, 2] == 99.0


def test_asnumpy_shares_memory_and_keeps_the_tensor_alive():
    t = ms.Tensor(np.ones((4, 5), dtype=np.int32))
    b = t.asnumpy()
    assert b.ctypes.data == t._address()
    addr = t._address()
    del t
    gc.collect()
    assert b.ctypes.data == addr and b.sum() == 20  # b's base keeps the memory


def test_buffer_protocol_is_zero_copy():
    t = ms.Tensor(np.zeros((2, 3), dtype=np.float32))
    view = np.asarray(t)
    assert view.ctypes.data == t._address()
    assert view.shape == (2, 3) and view.dtype == np.float32


def test_a_tensor_keeps_its_array_alive():
    t = ms.Tensor(np.full((1000,), 7.0, dtype=np.float32))
    gc.collect()
    assert float(t.asnumpy().sum()) == 7000.0


def test_other_dtypes_and_layouts_are_converted():
    t = ms.Tensor(np.arange(6, dtype=np.float64).reshape(2, 3).T)
    assert t.dtype == ms.float32 and t.shape == (3, 2)
    assert np.array_equal(t.asnumpy(), np.arange(6, dtype=np.float32).reshape(2, 3).T)
    assert ms.Tensor(np.array([1, 2], dtype=np.int64)).dtype == ms.int32
    assert ms.Tensor(3.5).item() == 3.5


def test_bad_dtype_is_a_value_error():
    with pytest.raises(ValueError, match="cannot be a tensor"):
        ms.Tensor(np.array(["a", "b"]))


def test_a_scalar_prints_as_mindspore_prints_a_loss():
    # MindSpore prints a 0-d float32 tensor as numpy prints a float32: the shortest digits.
    for v in (2.5, 2.3026438, 0.1, 1e-8, 123456.79):
        assert str(ms.Tensor(np.float32(v))) == str(np.float32(v))
