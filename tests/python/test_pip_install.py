"""`pip install .` works offline from a checkout with Debian's packages: into a virtual
environment (Debian's own Python is externally managed), from no index, reusing the build tree."""
import os
import subprocess

from conftest import BUILD, PYTHON, ROOT


def test_pip_install_offline_into_a_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    env = dict(os.environ, SHARDFLOW_CMAKE_BUILD_DIR=BUILD, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)  # the installed package, not the build tree's
    p = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-index", ROOT], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:]
    check = ("import numpy as np, shardflow as ms; "
             "print(ms.__file__); print(ms.Tensor(np.arange(3, dtype=np.float32)).asnumpy().sum())")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", check], cwd=str(tmp_path), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert out.returncode == 0, out.stdout
    where, total = out.stdout.split()
    assert where.startswith(str(venv)) and float(total) == 3.0
