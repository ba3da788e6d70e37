"""A small Fashion-MNIST: the first rows of Debian's files, written as IDX, so that tests which
start many jobs (tests/python, tests/elastic) read kilobytes instead of the whole set."""
import gzip
import os
import struct

FASHION = "/usr/share/datasets/fashion-mnist"


def write_small_mnist(path, train_rows=640, test_rows=1000):
    """Writes the first `train_rows` training and `test_rows` test rows under `path`."""
    os.makedirs(path, exist_ok=True)
    for prefix, n in (("train", train_rows), ("t10k", test_rows)):
        with gzip.open(os.path.join(FASHION, f"{prefix}-images-idx3-ubyte.gz")) as f:
            images = f.read(16 + n * 784)[16:]
        with gzip.open(os.path.join(FASHION, f"{prefix}-labels-idx1-ubyte.gz")) as f:
            labels = f.read(8 + n)[8:]
        with open(os.path.join(path, f"{prefix}-images-idx3-ubyte"), "wb") as f:
            f.write(struct.pack(">IIII", 2051, n, 28, 28) + images)
        with open(os.path.join(path, f"{prefix}-labels-idx1-ubyte"), "wb") as f:
            f.write(struct.pack(">II", 2049, n) + labels)
    return path
