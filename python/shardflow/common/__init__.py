"""Tensors, parameters, initializers and tracing (mindspore.common)."""
from .tensor import Tensor, float32, int32, dtype
from .parameter import Parameter
from .initializer import initializer
from .seed import set_seed, get_seed
