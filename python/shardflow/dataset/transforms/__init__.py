"""mindspore.dataset.transforms: TypeCast."""
import sys

from ... import _shardflow as _C


class TypeCast:
    def __init__(self, data_type):
        if not isinstance(data_type, _C.DType):
            raise _C.InvalidArgument(f"TypeCast: {data_type!r} is not a shardflow dtype (float32 or int32)")
        self._t = _C.TypeCast(data_type)


c_transforms = sys.modules[__name__]
py_transforms = c_transforms
transforms = c_transforms
