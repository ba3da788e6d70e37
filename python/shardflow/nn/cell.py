"""Cell (mindspore.nn.Cell). A subclass defines ``__init__`` (its layers, parameters and ops as
attributes, registered under their attribute names) and ``construct``, which is traced into
shardflow's graph when the network is first trained or differentiated: its tensors are Symbols
whose ops add graph nodes, and the step then runs in C++ without Python."""
from .. import _shardflow as _C
from ..ops.primitive import Primitive


class _Parameters(list):
    """A cell's parameter list, which remembers the cell (value_and_grad shards by its strategies)."""

    def __init__(self, params, cell):
        super().__init__(params)
        self._sf_cell = cell


class Cell:
    """The base of every network piece; see the module's docstring."""

    _leaf = False  # a built-in layer backed by a C++ cell of its own

    def __init__(self, auto_prefix=True, flags=None):
        object.__setattr__(self, "_cell", _C.PyCell(self))
        object.__setattr__(self, "_children", {})

    def __setattr__(self, name, value):
        if "_cell" not in self.__dict__:
            raise _C.InvalidArgument(f"{type(self).__name__}: call super().__init__() before setting '{name}'")
        if not name.startswith("_") and not isinstance(getattr(type(self), name, None), property):
            if isinstance(value, Cell):
                if self._leaf:
                    raise _C.InvalidArgument(f"{type(self).__name__} is a built-in layer: it takes no child cells")
                self._cell.add_cell(name, value._cell)
                self._children[name] = value
            elif isinstance(value, _C.Parameter):
                self._cell.add_parameter(getattr(value, "_given_name", None) or name, value)
            elif isinstance(value, Primitive):
                value._bind(self._cell.add_primitive(name, value._op, value._attrs))
        object.__setattr__(self, name, value)

    def construct(self, *inputs):
        raise NotImplementedError(f"{type(self).__name__}.construct")

    def __call__(self, *args):
        if _C.in_trace():
            if len(args) == 1:
                return _C.call_cell(self._cell, args[0])
            if self._leaf:
                raise _C.InvalidArgument(f"{type(self).__name__} takes one input, not {len(args)}")
            return _C.call_scoped(self._cell, lambda: self.construct(*args))
        return self._eager(*args)

    def _eager(self, *args):
        """The cell on concrete tensors: its construct traced once per input shape into a graph that
        runs in C++ (inference; gradients come from value_and_grad or Model)."""
        mode = _C.get_auto_parallel_context("parallel_mode")
        if mode in ("semi_auto_parallel", "auto_parallel"):
            raise _C.InvalidArgument(f"{type(self).__name__} called on concrete tensors in {mode} mode: each rank "
                                     "holds blocks of the parameters; use Model.eval")
        forward = self.__dict__.get("_forward")
        if forward is None:
            forward = _C.Forward(lambda *xs: self(*xs), self._cell.get_parameters())
            object.__setattr__(self, "_forward", forward)
        return forward(*args)

    # --- parameters -------------------------------------------------------------------------
    def get_parameters(self, expand=True):
        return iter(self._cell.get_parameters())

    def trainable_params(self, recurse=True):
        return _Parameters(self._cell.trainable_params(), self)

    def untrainable_params(self, recurse=True):
        return self._cell.untrainable_params()

    def parameters_dict(self, recurse=True):
        return {p.name: p for p in self._cell.get_parameters()}

    def parameters_and_names(self, name_prefix="", expand=True):
        return ((p.name, p) for p in self._cell.get_parameters())

    def cells_and_names(self, cell_list=None, name_prefix=""):
        yield name_prefix, self
        for name, c in self._children.items():
            yield from c.cells_and_names(None, f"{name_prefix}.{name}" if name_prefix else name)

    def name_cells(self):
        return dict(self._children)

    def set_train(self, mode=True):
        self._cell.set_train(mode)
        return self

    @property
    def training(self):
        return self._cell.training

    # --- pipeline parallel (seed 003) ----------------------------------------------------------
    @property
    def pipeline_stage(self):
        return self._cell.pipeline_stage

    @pipeline_stage.setter
    def pipeline_stage(self, stage):
        if isinstance(stage, bool) or not isinstance(stage, int) or stage < 0:
            raise _C.InvalidArgument(f"{type(self).__name__}.pipeline_stage: {stage!r} is not a stage (an int >= 0)")
        self._cell.pipeline_stage = stage

    def infer_param_pipeline_stage(self):
        return _Parameters(self._cell.infer_param_pipeline_stage(), self)

    def shard(self, *args, **kwargs):
        raise _C.InvalidArgument(f"{type(self).__name__}.shard: shard the ops inside it (ops.X().shard(...))")
