"""Shared fixtures of the Python package's tests: where the build put things, and a small
Fashion-MNIST (the first rows of Debian's files, written as IDX) so a seed's ten epochs take
seconds."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from small_mnist import write_small_mnist  # noqa: E402

BUILD = os.environ.get("SF_BUILD_DIR", os.path.join(ROOT, "build"))


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
