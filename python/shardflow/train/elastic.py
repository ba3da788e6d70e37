"""train_elastic: Model.train that survives lost ranks (docs/elastic.md, "Python").

Under `sfrun --elastic MIN:MAX` a rank that dies does not end the job: the survivors agree on who
is left and on the step to go back to, call `build` again in their new world, put that step's
state back from memory and go on; with `--max-restarts K` a replacement joins the same way.
`build(generation)` makes one world's training for the world it is called in — its ranks are
get_rank() and get_group_size() there, so a dataset sharded by them is sharded again for the new
rank count — and returns (model, train_dataset) or (model, train_dataset, callbacks).

    def build(generation):
        net = Network()
        model = ms.Model(net, nn.CrossEntropyLoss(), nn.SGD(net.trainable_params(), 1e-2))
        data = create_dataset(get_rank(), get_group_size())
        return model, data, [LossMonitor(10)]

    model = train_elastic(2, build)   # the last world's model, for evaluation

Without SF_ELASTIC (no --elastic) it builds once and trains once.
"""
import sys

from .. import _shardflow as _C
from .model import Model, _batched, _callbacks


def train_elastic(epoch, build, timeline_dir="", stop_checkpoint_dir="elastic_checkpoint"):
    """Trains `epoch` epochs of what `build(generation)` makes (see the module's text); returns
    the model of the world that finished. timeline_dir: each rank writes its steps and membership
    changes to DIR/rank.R.timeline.json (sfviz show draws them). stop_checkpoint_dir: where the
    survivors save the agreed step before they stop, when fewer than MIN are left."""
    if not callable(build):
        raise _C.InvalidArgument(f"train_elastic: build is a function of the generation, not {type(build).__name__}")
    if not isinstance(stop_checkpoint_dir, str) or not stop_checkpoint_dir:
        raise _C.InvalidArgument("train_elastic: stop_checkpoint_dir is a directory's path, not "
                                 f"{stop_checkpoint_dir!r}")

    def setup(generation):
        got = build(generation)
        if not isinstance(got, tuple) or len(got) not in (2, 3) or not isinstance(got[0], Model):
            raise _C.InvalidArgument("train_elastic: build returns (model, train_dataset) or (model, train_dataset, "
                                     f"callbacks), with a Model first; it returned {type(got).__name__}")
        model, dataset = got[0], got[1]
        callbacks = got[2] if len(got) == 3 else None
        # The last item owns the rest for as long as the world trains.
        return model._model, _batched(dataset), _callbacks(callbacks), (model, dataset, callbacks)

    sys.stdout.flush()
    done = _C.train_elastic(int(epoch), setup, str(timeline_dir), stop_checkpoint_dir)
    sys.stdout.flush()
    return done[0]
