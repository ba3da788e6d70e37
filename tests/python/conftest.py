"""Shared fixtures of the Python package's tests: where the build put things, and a small
Fashion-MNIST (the first rows of Debian's files, written as IDX) so a seed's ten epochs take
seconds."""
import gzip
import os
import struct
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SF_BUILD_DIR", os.path.join(ROOT, "build"))
FASHION = "/usr/share/datasets/fashion-mnist"


def write_small_mnist(path, train_rows=640, test_rows=1000):
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


@pytest.fixture(scope="session")
def small_mnist(tmp_path_factory):
    return write_small_mnist(str(tmp_path_factory.mktemp("fashion")))


@pytest.fixture(scope="session")
def tiny_mnist(tmp_path_factory):
    """64 training rows: two batches of 32, for the ResNet of seed 003."""
    return write_small_mnist(str(tmp_path_factory.mktemp("fashion64")), 64, 1000)


def python_env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(BUILD, "python") + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def run(cmd, cwd, timeout=240, **env):
    """Runs cmd; returns its stdout, failing the test with its output when it fails."""
    p = subprocess.run(cmd, cwd=cwd, env=python_env(**env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    assert p.returncode == 0, f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-3000:]}"
    return p.stdout


PYTHON = sys.executable
