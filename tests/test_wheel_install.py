"""plan-lsp installs like every language server: the wheel built from the checkout, installed
with its dependencies into a fresh tool environment (`uv tool install`, and a plain venv with
pip) from local wheels only, gives a `plan-lsp` that serves LSP over stdio from outside the
checkout, with every data file the package reads.

The wheels (the server's dependencies, setuptools and wheel to build it, and uv) are what
scripts/test-tools.sh downloads into the test cache; nothing here reaches a package index."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import IO, Any

import pytest

from plan_lsp import __version__
from tests.needs import need

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("PLAN_LSP_TEST_CACHE", Path.home() / ".cache" / "plan-lsp-tests"))
WHEELS = CACHE / "wheels"
UV = CACHE / "uv" / "bin" / "uv"
BASE_PYTHON = os.path.realpath(getattr(sys, "_base_executable", sys.executable))


def offline_env(tmp: Path) -> dict[str, str]:
    """No package index, no machine pip configuration, nothing of the checkout on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "PYTHON"))}
    env.pop("VIRTUAL_ENV", None)
    return env | {
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "UV_OFFLINE": "1",
        "UV_NO_CONFIG": "1",
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_CACHE_DIR": str(tmp / "uv-cache"),
        "PLAN_LSP_CONFIG": os.devnull,
        "XDG_STATE_HOME": str(tmp / "state"),
    }


def run(cmd: list[str | Path], env: dict[str, str], cwd: Path, timeout: float = 300) -> str:
    proc = subprocess.run(
        [str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"{cmd}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the checkout's sources (the checkout stays untouched)
    with the build backend from the local wheels."""
    need(
        (WHEELS / ".stamp").is_file(),
        f"no dependency wheels in {WHEELS}: run scripts/test-tools.sh",
    )
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(ROOT / "plan_lsp", src / "plan_lsp", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    env = offline_env(tmp)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--find-links",
         WHEELS, "-w", tmp / "dist", src], env, tmp)  # fmt: skip
    (built,) = (tmp / "dist").glob("plan_lsp-*.whl")
    return built


def test_wheel_carries_every_data_file(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    package = ROOT / "plan_lsp"
    expected = {
        path.relative_to(ROOT).as_posix()
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    assert expected - names == set()
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    with zipfile.ZipFile(wheel) as archive:
        assert "plan-lsp = plan_lsp.cli:main" in archive.read(entry).decode()


def send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    stdin.flush()


def receive(stdout: IO[bytes]) -> dict[str, Any]:
    length = 0
    while (line := stdout.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    assert length, "the server closed its output"
    message: dict[str, Any] = json.loads(stdout.read(length))
    return message


def request(proc: subprocess.Popen[bytes], id_: int, method: str, params: Any) -> Any:
    """Send a request; answer the server's own requests with null until the response comes."""
    assert proc.stdin is not None and proc.stdout is not None
    send(proc.stdin, {"id": id_, "method": method, "params": params})
    while True:
        message = receive(proc.stdout)
        if message.get("id") == id_ and "method" not in message:
            assert "error" not in message, message
            return message["result"]
        if "method" in message and "id" in message:
            send(proc.stdin, {"id": message["id"], "result": None})


def serve_from(plan_lsp: Path, env: dict[str, str], workspace: Path) -> dict[str, Any]:
    """Initialize `plan-lsp serve` (stdio) on `workspace`, ask planLsp/state, shut down."""
    proc = subprocess.Popen(
        [str(plan_lsp), "serve"], cwd=workspace, env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        init = request(proc, 1, "initialize", {
            "processId": os.getpid(), "rootUri": workspace.as_uri(),
            "capabilities": {"experimental": {"planLsp": {}}},
            "workspaceFolders": [{"uri": workspace.as_uri(), "name": workspace.name}],
        })  # fmt: skip
        assert init["serverInfo"]["name"] == "plan-lsp"
        assert "planLsp" in init["capabilities"]["experimental"]
        assert proc.stdin is not None
        send(proc.stdin, {"method": "initialized", "params": {}})
        state: dict[str, Any] = request(proc, 2, "planLsp/state", {})
        request(proc, 3, "shutdown", None)
        send(proc.stdin, {"method": "exit"})
        assert proc.wait(timeout=30) == 0
        return state
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def check_installed(python: Path, plan_lsp: Path, env: dict[str, str], tmp: Path) -> None:
    """The command on PATH runs the installed package, not the checkout, and serves."""
    where = run([python, "-c", "import plan_lsp; print(plan_lsp.__file__)"], env, tmp).strip()
    assert Path(where).is_relative_to(python.parent.parent), where
    assert not Path(where).is_relative_to(ROOT)
    assert run([plan_lsp, "--version"], env, tmp).strip() == f"plan-lsp {__version__}"
    workspace = tmp / "project"
    workspace.mkdir()
    (workspace / "hello.py").write_text("print('hello')\n")
    state = serve_from(plan_lsp, env, workspace)
    assert state["mode"] == "plan"
    # The command line reads the packaged shell database (policy/shell/programs.toml).
    check = subprocess.run(
        [plan_lsp, "check", "command", "sed -i s/a/b/ x"], env=env, cwd=tmp,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert check.returncode == 1, check.stderr
    assert json.loads(check.stdout)["reasons"] == [
        "`-i` makes `sed` edit files in place (write:filesystem)"
    ]


def test_uv_tool_install(wheel: Path, tmp_path: Path) -> None:
    need(UV.is_file(), f"uv is not installed in {UV.parent}: run scripts/test-tools.sh")
    env = offline_env(tmp_path) | {
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
    }
    run([UV, "tool", "install", "--no-index", "--find-links", WHEELS, "--python", BASE_PYTHON,
         wheel], env, tmp_path)  # fmt: skip
    plan_lsp = tmp_path / "bin" / "plan-lsp"
    check_installed(tmp_path / "tools" / "plan-lsp" / "bin" / "python", plan_lsp, env, tmp_path)
    # The whole demo, from the installed package (its script and sample project are data).
    demo = run([plan_lsp, "demo", "--quiet"], env, tmp_path, timeout=240)
    assert "demo: OK" in demo


def test_pip_install_into_a_fresh_venv(wheel: Path, tmp_path: Path) -> None:
    env = offline_env(tmp_path)
    venv = tmp_path / "venv"
    run([BASE_PYTHON, "-m", "venv", venv], env, tmp_path)
    run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-index", "--find-links",
         WHEELS, wheel], env, tmp_path)  # fmt: skip
    check_installed(venv / "bin" / "python", venv / "bin" / "plan-lsp", env, tmp_path)
