"""The tests pass with `python` behind a pyenv shim: a home whose `~/.pyenv/shims` comes first
on PATH, its `python`/`python3` shell scripts that exec the real interpreter (pyenv's shims do
the same through `$PYENV_ROOT/libexec/pyenv exec`). The interpreter they run lives in the
home too, in `~/.pyenv/versions` (a virtual environment of the real interpreter, as
pyenv-virtualenv makes). The sandbox hides the home and shows `~/.pyenv` again, read-only:
the commands inside it that run `python3` by name go through the shim, and the server the
harness starts runs from the interpreter the shim ran.

Each style of shim runs a handful of sandbox-touching tests (bubblewrap and Landlock, a
server with its sandbox self-test, `python3` inside the sandbox) in a pytest of its own,
started as `python -m pytest` with `python` resolved through PATH."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.sandbox_support import require

CHECKOUT = Path(__file__).resolve().parents[1]
TESTS_UNDER_THE_SHIM = [
    # python3 by name inside bubblewrap and under Landlock
    "tests/test_sandbox.py::test_unix_socket_in_host_tmp_is_unreachable",
    "tests/test_sandbox.py::test_the_server_keyring_is_out_of_reach",
    "tests/test_sandbox_landlock.py::test_network_sockets_are_denied",
    "tests/test_sandbox_seccomp.py::test_python_runs_under_the_filter",
    "tests/test_sandbox_ipc.py::test_multiprocessing_still_works_under_bubblewrap",
    # the bash tool's sandboxed commands and their lifetime
    "tests/test_bash_lifetime.py",
    # a server started from the shim's interpreter, its self-test, plan-mode commands
    "tests/test_home_allow_list_server.py",
]

PLAIN_SHIM = '#!/bin/sh\nexec {python} "$@"\n'
# pyenv's own shape: the shim names its root and runs `pyenv exec`, which finds the version
# and execs it.
PYENV_SHIM = """#!/usr/bin/env bash
set -e
program="${{0##*/}}"
export PYENV_ROOT="{root}"
exec "{root}/libexec/pyenv" exec "$program" "$@"
"""
PYENV_EXEC = '#!/usr/bin/env bash\nset -e\n[ "$1" = exec ] && shift\nshift\nexec {python} "$@"\n'


def _pyenv_version(root: Path) -> Path:
    """A version under the pyenv root as pyenv-virtualenv makes one: a virtual environment of
    the real interpreter, here seeing this checkout's packages; returns its `bin/python`."""
    version = root / "versions" / "plan-lsp"
    real = os.path.realpath(sys.executable)
    subprocess.run([real, "-m", "venv", "--without-pip", str(version)], check=True, timeout=120)
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    packages = sysconfig.get_paths()["purelib"]  # this checkout's environment
    (version / "lib" / minor / "site-packages" / "checkout.pth").write_text(
        f"import site; site.addsitedir({packages!r})\n"
    )
    return version / "bin" / "python"


def _fake_pyenv_home(home: Path, style: str) -> Path:
    """A home with `~/.pyenv/shims/python` and `python3` that run a version installed in
    `~/.pyenv/versions` (style `custom-root`: pyenv installed elsewhere in the home, its
    PYENV_ROOT `~/tools/pyenv`); returns the shims folder."""
    root = home / ("tools/pyenv" if style == "custom-root" else ".pyenv")
    shims = root / "shims"
    shims.mkdir(parents=True)
    python = _pyenv_version(root)
    if style != "plain":
        libexec = root / "libexec"
        libexec.mkdir()
        (libexec / "pyenv").write_text(PYENV_EXEC.format(python=python))
        (libexec / "pyenv").chmod(0o755)
    for name in ("python", "python3"):
        shim = shims / name
        shape = PLAIN_SHIM if style == "plain" else PYENV_SHIM
        shim.write_text(shape.format(python=python, root=root))
        shim.chmod(0o755)
    return shims


@pytest.mark.process
@pytest.mark.timeout(900)
@pytest.mark.parametrize("style", ["plain", "pyenv", "custom-root"])
def test_sandbox_tests_pass_with_python_behind_a_pyenv_shim(tmp_path: Path, style: str) -> None:
    require("bubblewrap")
    require("landlock")
    home = tmp_path / "home"
    shims = _fake_pyenv_home(home, style)
    root = shims.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(
        HOME=str(home),
        PYENV_ROOT=str(root),
        PATH=f"{shims}{os.pathsep}{env.get('PATH', os.defpath)}",
    )
    # `python` is the shim, for this process and for the commands the tests sandbox
    assert shutil.which("python", path=env["PATH"]) == str(shims / "python")
    assert shutil.which("python3", path=env["PATH"]) == str(shims / "python3")
    done = subprocess.run(
        ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         "-o", "addopts=", *TESTS_UNDER_THE_SHIM],
        cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=840,
    )  # fmt: skip
    output = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, output
    summary = done.stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and "skipped" not in summary, output
