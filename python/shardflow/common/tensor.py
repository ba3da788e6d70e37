"""Tensor and dtypes. A Tensor made from a numpy array shares its memory; ``asnumpy()`` shares
the tensor's (no copy either way)."""
from .. import _shardflow as _C

Tensor = _C.Tensor
dtype = _C.DType
float32 = _C.DType.float32
int32 = _C.DType.int32
