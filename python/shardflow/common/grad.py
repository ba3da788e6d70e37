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
    # Semi-auto and auto parallel shard the ops of the network the weights came from (its
    # trainable_params() list remembers it) by its strategies; the other modes run the function
    # as it is, on this rank's data.
    cell = None
    if _C.get_auto_parallel_context("parallel_mode") in ("semi_auto_parallel", "auto_parallel"):
        cell = getattr(weights, "_sf_cell", None)
        if cell is None:
            raise _C.InvalidArgument("value_and_grad: in semi-auto and auto parallel mode the weights are a network's "
                                     "trainable_params() (its ops' strategies shard the step)")
    return _C.GradFunction(fn, list(weights), bool(has_aux), cell._cell if cell is not None else None)


def grad(fn, grad_position=None, weights=None, has_aux=False):
    """The gradients alone (MindSpore's grad)."""
    f = value_and_grad(fn, grad_position, weights, has_aux)

    def gradients(*inputs):
        return f(*inputs)[1]
    return gradients


def jit(fn=None, **kwargs):
    """MindSpore's jit: compiles a function into a graph. Here the graphs are the ones
    value_and_grad and Model already trace, so jit returns the function unchanged."""
    if fn is None:
        return lambda f: f
    return fn
