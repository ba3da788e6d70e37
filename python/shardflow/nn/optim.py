"""Optimizers (mindspore.nn.optim). ``optimizer(grads)`` steps the parameters with the gradients
(one per parameter, in order), with the GIL released."""
from .. import _shardflow as _C


def _params(params, who):
    params = list(params)
    if params and isinstance(params[0], dict):
        raise _C.InvalidArgument(f"{who}: parameter groups are not supported; give a list of parameters")
    return params


def _number(v, who, what):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _C.InvalidArgument(f"{who}: {what} {v!r} is not a number (schedules are not supported)")
    return float(v)


class Optimizer:
    def __init__(self, cxx):
        self._opt = cxx

    @property
    def parameters(self):
        return self._opt.parameters

    @property
    def learning_rate(self):
        return self._opt.learning_rate

    @property
    def global_step(self):
        return self._opt.global_step

    def __call__(self, gradients):
        self._opt.step(list(gradients))
        return True


class SGD(Optimizer):
    def __init__(self, params, learning_rate=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 loss_scale=1.0):
        if dampening != 0.0 or nesterov or loss_scale != 1.0:
            raise _C.InvalidArgument("SGD: dampening, nesterov and loss_scale are not supported")
        super().__init__(_C.SGD(_params(params, "SGD"), _number(learning_rate, "SGD", "learning_rate"),
                                _number(momentum, "SGD", "momentum"), _number(weight_decay, "SGD", "weight_decay")))


class Momentum(Optimizer):
    def __init__(self, params, learning_rate, momentum, weight_decay=0.0, loss_scale=1.0, use_nesterov=False):
        if weight_decay != 0.0 or loss_scale != 1.0 or use_nesterov:
            raise _C.InvalidArgument("Momentum: weight_decay, loss_scale and use_nesterov are not supported")
        super().__init__(_C.Momentum(_params(params, "Momentum"), _number(learning_rate, "Momentum", "learning_rate"),
                                     _number(momentum, "Momentum", "momentum")))


class Adam(Optimizer):
    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, use_locking=False,
                 use_nesterov=False, weight_decay=0.0, loss_scale=1.0):
        if use_nesterov or weight_decay != 0.0 or loss_scale != 1.0:
            raise _C.InvalidArgument("Adam: use_nesterov, weight_decay and loss_scale are not supported (AdamWeightDecay)")
        super().__init__(_C.Adam(_params(params, "Adam"), _number(learning_rate, "Adam", "learning_rate"),
                                 float(beta1), float(beta2), float(eps)))


class AdamWeightDecay(Optimizer):
    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-6, weight_decay=0.0):
        super().__init__(_C.AdamW(_params(params, "AdamWeightDecay"),
                                  _number(learning_rate, "AdamWeightDecay", "learning_rate"), float(beta1),
                                  float(beta2), float(eps), float(weight_decay)))
