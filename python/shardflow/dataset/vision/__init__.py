"""mindspore.dataset.vision: the image transforms shardflow runs in C++."""
from ... import _shardflow as _C


class _Transform:
    def __init__(self, t):
        self._t = t


class Rescale(_Transform):
    def __init__(self, rescale, shift):
        super().__init__(_C.Rescale(float(rescale), float(shift)))


class Normalize(_Transform):
    def __init__(self, mean, std, is_hwc=True):
        super().__init__(_C.Normalize([float(m) for m in mean], [float(s) for s in std]))


class HWC2CHW(_Transform):
    def __init__(self):
        super().__init__(_C.HWC2CHW())


c_transforms = __import__("sys").modules[__name__]
py_transforms = c_transforms
transforms = c_transforms
