"""Training from a worker thread with a Python callback must finish: the training call
releases the GIL and the callback, called from the thread that runs the step, takes it (the
pattern of pybind11's deadlock reports #1525 and #1087)."""
import threading
from concurrent.futures import ThreadPoolExecutor

import shardflow as ms
from shardflow import nn, train
import shardflow.dataset as ds


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(28 * 28, 10)

    def construct(self, x):
        return self.fc(self.flatten(x))


# How far the main thread has spun; a callback records it at each step.
progress = {"spins": 0}


class Recorder(train.Callback):
    def __init__(self):
        self.steps = []
        self.threads = set()
        self.spins_seen = []

    def step_end(self, run_context):
        args = run_context.original_args()
        self.steps.append((args.cur_step_num, float(args.net_outputs.asnumpy())))
        self.threads.add(threading.get_ident())
        self.spins_seen.append(progress["spins"])


def train_once(path, recorder):
    data = ds.MnistDataset(path).map(ds.vision.Rescale(1.0 / 255.0, 0), "image").map(
        ds.transforms.TypeCast(ms.int32), "label").batch(32, drop_remainder=True)
    net = Net()
    model = ms.Model(net, nn.CrossEntropyLoss(), nn.SGD(net.trainable_params(), 1e-2))
    model.train(2, data, callbacks=[recorder, train.LossMonitor(1000)])
    return len(recorder.steps)


def test_training_in_a_thread_pool_with_a_python_callback(small_mnist):
    recorder = Recorder()
    with ThreadPoolExecutor(max_workers=2) as pool:
        future = pool.submit(train_once, small_mnist, recorder)
        spins = 0
        while not future.done():  # the main thread keeps running Python meanwhile
            spins += 1
            progress["spins"] = spins
        steps = future.result(timeout=120)
    assert steps == 2 * 640 // 32
    assert [s for s, _ in recorder.steps] == list(range(1, steps + 1))
    assert all(loss > 0 for _, loss in recorder.steps)
    assert spins > 0
    # The main thread ran Python between the first step and the last: the training call does not
    # hold the GIL while the steps run.
    assert recorder.spins_seen[-1] > recorder.spins_seen[0]


def test_two_trainings_on_two_threads_at_once(small_mnist):
    recorders = [Recorder(), Recorder()]
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(train_once, small_mnist, r) for r in recorders]
        results = [f.result(timeout=120) for f in futures]
    assert results == [40, 40]
    # The same seed and data: both runs see the same losses.
    assert recorders[0].steps == recorders[1].steps


def test_an_exception_in_a_callback_reaches_the_caller(small_mnist):
    class Boom(train.Callback):
        def step_end(self, run_context):
            raise RuntimeError("boom at step %d" % run_context.original_args().cur_step_num)

    data = ds.MnistDataset(small_mnist).map(ds.transforms.TypeCast(ms.int32), "label").batch(32)
    net = Net()
    model = ms.Model(net, nn.CrossEntropyLoss(), nn.SGD(net.trainable_params(), 1e-2))
    try:
        model.train(1, data, callbacks=[Boom()])
    except RuntimeError as e:
        assert "boom at step 1" in str(e)
    else:
        raise AssertionError("the callback's exception was lost")
