"""value_and_grad: the loss of a function of tensors and its gradients with respect to
parameters. The function is traced once (per input shape) into a graph that computes both; each
call then runs that graph in the actor runtime with the GIL released."""
from .. import _shardflow as _C


def value_and_grad(fn, grad_position=None, weights=None, has_aux=False):
    """MindSpore's value_and_grad with ``weights`` (the gradients of the parameters).

    Returns a function: ``loss, grads = f(*inputs)``; with ``has_aux=True`` the function's first
    output is the loss and ``(loss, aux), grads = f(*inputs)``, where aux is None (the graph fetches
    only the loss and the gradients; docs/python.md).
    """
    if weights is None:
        raise _C.InvalidArgument("value_and_grad: give weights (the parameters to differentiate, "
                                 "e.g. net.trainable_params()); gradients of the inputs are not supported")
    if grad_position is not None:
        raise _C.InvalidArgument("value_and_grad: grad_position must be None (gradients of the inputs are not "
                                 "supported; the gradients are the weights')")
    if isinstance(weights, _C.Parameter):
        weights = [weights]
    return _C.GradFunction(fn, list(weights), bool(has_aux))


def grad(fn, grad_position=None, weights=None, has_aux=False):
    """The gradients alone (MindSpore's grad)."""
    f = value_and_grad(fn, grad_position, weights, has_aux)

    def gradients(*inputs):
        return f(*inputs)[1]
    return gradients
