"""The built-in layers, each backed by shardflow's C++ cell of the same name."""
from .. import _shardflow as _C
from .cell import Cell


class _Leaf(Cell):
    _leaf = True

    def __init__(self, cxx):
        object.__setattr__(self, "_cell", cxx)
        object.__setattr__(self, "_children", {})


def _init_name(init, what):
    if isinstance(init, str):
        return init
    name = getattr(init, "_sf_init", None)
    if name is None:
        raise _C.InvalidArgument(f"{what}: an initializer name ('normal', 'zeros', ...) or initializer object")
    return name


class Dense(_Leaf):
    """y = x W^T + b. weight_init / bias_init default to MindSpore's (HeUniform-style) defaults."""

    def __init__(self, in_channels, out_channels, weight_init=None, bias_init=None, has_bias=True, activation=None):
        if activation is not None:
            raise _C.InvalidArgument("Dense: activation is not supported; add an nn.ReLU() after it")
        w = "dense_weight" if weight_init is None else _init_name(weight_init, "Dense weight_init")
        b = "dense_bias" if bias_init is None else _init_name(bias_init, "Dense bias_init")
        super().__init__(_C.Dense(int(in_channels), int(out_channels), w, b, bool(has_bias)))

    @property
    def weight(self):
        return self._cell.weight

    @property
    def bias(self):
        return self._cell.bias


class ReLU(_Leaf):
    def __init__(self):
        super().__init__(_C.ReLU())


class Flatten(_Leaf):
    def __init__(self, start_dim=1, end_dim=-1):
        if (start_dim, end_dim) != (1, -1):
            raise _C.InvalidArgument("Flatten: only start_dim=1, end_dim=-1 (flatten all but the batch dim)")
        super().__init__(_C.Flatten())


class SequentialCell(_Leaf):
    """The cells in order, named "0", "1", ... (as MindSpore names them)."""

    def __init__(self, *args):
        cells = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
        for c in cells:
            if not isinstance(c, Cell):
                raise _C.InvalidArgument(f"SequentialCell: {type(c).__name__} is not a Cell")
        super().__init__(_C.SequentialCell([c._cell for c in cells]))
        object.__setattr__(self, "_children", {str(i): c for i, c in enumerate(cells)})

    def __getitem__(self, i):
        return list(self._children.values())[i]

    def __len__(self):
        return len(self._children)


def _pad(pad_mode, padding, kernel_size):
    if pad_mode == "same":
        return (kernel_size - 1) // 2
    if pad_mode == "valid":
        return 0
    if pad_mode == "pad":
        return int(padding)
    raise _C.InvalidArgument(f"pad_mode '{pad_mode}': same, valid or pad")


class Conv2d(_Leaf):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same", padding=0, dilation=1,
                 group=1, has_bias=False, weight_init=None, bias_init=None, data_format="NCHW"):
        if dilation != 1 or group != 1 or data_format != "NCHW":
            raise _C.InvalidArgument("Conv2d: dilation 1, group 1 and NCHW only")
        w = "he_normal" if weight_init is None else _init_name(weight_init, "Conv2d weight_init")
        b = "zeros" if bias_init is None else _init_name(bias_init, "Conv2d bias_init")
        super().__init__(_C.Conv2d(int(in_channels), int(out_channels), int(kernel_size), int(stride),
                                   _pad(pad_mode, padding, int(kernel_size)), bool(has_bias), w, b))


class BatchNorm2d(_Leaf):
    def __init__(self, num_features, eps=1e-5, momentum=0.9, affine=True, gamma_init="ones", beta_init="zeros",
                 moving_mean_init="zeros", moving_var_init="ones", use_batch_statistics=None, data_format="NCHW"):
        super().__init__(_C.BatchNorm2d(int(num_features), float(eps), float(momentum)))


class MaxPool2d(_Leaf):
    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, data_format="NCHW"):
        super().__init__(_C.MaxPool2d(int(kernel_size), int(stride), _pad(pad_mode, padding, int(kernel_size))))


class AvgPool2d(_Leaf):
    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, data_format="NCHW"):
        super().__init__(_C.AvgPool2d(int(kernel_size), int(stride), _pad(pad_mode, padding, int(kernel_size))))
