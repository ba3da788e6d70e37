"""mindspore.dataset: MnistDataset (IDX files, sharded), GeneratorDataset, map, shuffle, batch."""
import numpy as np

from .. import _shardflow as _C
from . import transforms, vision


def _columns(input_columns, who):
    if isinstance(input_columns, (list, tuple)):
        if len(input_columns) != 1:
            raise _C.InvalidArgument(f"{who}: map takes one input column")
        input_columns = input_columns[0]
    if not isinstance(input_columns, str):
        raise _C.InvalidArgument(f"{who}: input_columns is a column name")
    return input_columns


def _shards(num_shards, shard_id, who):
    if num_shards is None and shard_id is None:
        return 1, 0
    if num_shards is None or shard_id is None:
        raise _C.InvalidArgument(f"{who}: give both num_shards and shard_id, or neither")
    return int(num_shards), int(shard_id)


def _ops(operations):
    ops = operations if isinstance(operations, (list, tuple)) else [operations]
    return [getattr(op, "_t", op) for op in ops]


class Dataset:
    """A dataset of named columns; each call returns a new dataset, as MindSpore's do."""

    def __init__(self, cxx):
        self._d = cxx

    def map(self, operations=None, input_columns=None, output_columns=None, num_parallel_workers=None, **kwargs):
        if output_columns is not None and output_columns != input_columns:
            raise _C.InvalidArgument("map: output_columns must be the input column (transforms work in place)")
        return Dataset(self._d.map(_ops(operations), _columns(input_columns, "map")))

    def batch(self, batch_size, drop_remainder=False, num_parallel_workers=None, **kwargs):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise _C.InvalidArgument(f"batch: batch_size {batch_size!r} is not a positive int")
        return Dataset(self._d.batch(batch_size, bool(drop_remainder)))

    def shuffle(self, buffer_size):
        """A full shuffle, seeded by the global seed (buffer_size is accepted; every row is shuffled)."""
        return Dataset(self._d.shuffle(_C.get_seed()))

    def take(self, count=-1):
        return self if count == -1 else Dataset(self._d.take(int(count)))

    def get_dataset_size(self):
        return self._d.get_dataset_size()

    def get_col_names(self):
        return self._d.get_col_names()

    def get_batch_size(self):
        return self._d.batch_size or 1

    def create_tuple_iterator(self, columns=None, num_epochs=-1, output_numpy=False, do_copy=True):
        for row in self._d.next_epoch():
            yield tuple(t.asnumpy() for t in row) if output_numpy else row

    def create_dict_iterator(self, num_epochs=-1, output_numpy=False, do_copy=True):
        names = self.get_col_names()
        for row in self.create_tuple_iterator(output_numpy=output_numpy):
            yield dict(zip(names, row))

    def __iter__(self):
        return iter(self._d.next_epoch())


class MnistDataset(Dataset):
    """MNIST / Fashion-MNIST IDX files of ``dataset_dir``. Differences from MindSpore (docs/python.md):
    usage defaults to "train" and rows are not shuffled unless shuffle=True."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None, shuffle=None,
                 sampler=None, num_shards=None, shard_id=None, cache=None):
        if dataset_dir is None:
            raise _C.InvalidArgument("MnistDataset: dataset_dir is None (is DATA_PATH set?)")
        if sampler is not None:
            raise _C.InvalidArgument("MnistDataset: samplers are not supported (use num_shards / shard_id)")
        shards, shard = _shards(num_shards, shard_id, "MnistDataset")
        d = _C.Dataset.mnist(str(dataset_dir), usage or "train", shards, shard)
        if num_samples is not None:
            d = d.take(int(num_samples))
        if shuffle:
            d = d.shuffle(_C.get_seed())
        super().__init__(d)


def _rows(source):
    it = source() if callable(source) and not hasattr(source, "__getitem__") else source
    if hasattr(it, "__getitem__") and hasattr(it, "__len__"):
        return [it[i] for i in range(len(it))]
    return list(it)


class GeneratorDataset(Dataset):
    """Rows from a Python generator (or a callable returning one, or a random-access source), read
    once when the dataset is made and held as columns: the training loop then runs without Python.
    Rows that are whole batches (each yield a batch, as seed 002's) train one step per row."""

    def __init__(self, source, column_names=None, column_types=None, schema=None, num_samples=None,
                 num_parallel_workers=1, shuffle=True, sampler=None, num_shards=None, shard_id=None, **kwargs):
        rows = _rows(source)
        if not rows:
            raise _C.InvalidArgument("GeneratorDataset: the source yielded no rows")
        rows = [r if isinstance(r, tuple) else (r,) for r in rows]
        if column_names is None:
            column_names = [f"column_{i}" for i in range(len(rows[0]))]
        if isinstance(column_names, str):
            column_names = [column_names]
        for i, r in enumerate(rows):
            if len(r) != len(column_names):
                raise _C.InvalidArgument(f"GeneratorDataset: row {i} has {len(r)} values for {len(column_names)} "
                                         f"columns {column_names}")
        columns = []
        for c, name in enumerate(column_names):
            values = [np.asarray(r[c]) for r in rows]
            first = values[0].shape
            for i, v in enumerate(values):
                if v.shape != first:
                    raise _C.InvalidArgument(f"GeneratorDataset: column '{name}' row {i} has shape {v.shape}, "
                                             f"row 0 {first} (rows of one column have one shape)")
            col = np.stack(values)
            columns.append(col.astype(np.float32) if col.dtype.kind == "f" else col.astype(np.int32))
        shards, shard = _shards(num_shards, shard_id, "GeneratorDataset")
        d = _C.Dataset.from_columns(list(column_names), columns, shards, shard)
        if num_samples is not None:
            d = d.take(int(num_samples))
        if shuffle:
            d = d.shuffle(_C.get_seed())
        super().__init__(d)
        # Each row may be a whole batch (see the class's docstring): Model.train then trains the
        # rows in the order yielded, one step each.
        self._row_columns = (list(column_names), columns, shards > 1)
