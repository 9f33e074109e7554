"""Every benign command the `classified` allow-list passes really runs, the way plan mode
runs it without a sandbox (the plan environment, the git shim), in a scratch repository with
a dirty tree and a fake HOME, inside an outer bubblewrap jail that keeps changes observable.
Nothing may change: not the repository (files, index, refs), not the home directory (the
caches and logs tools write as a side effect are exactly what the allow-list must exclude).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from plan_lsp.policy.shell import classify_command
from tests.sandbox_support import require

CORPUS = Path(__file__).parent / "shell_corpus" / "benign.txt"
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com",
    "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    # Long ago: relative dates ("25 years ago") read the same in runs seconds or minutes apart.
    "GIT_AUTHOR_DATE": "2001-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2001-01-01T00:00:00+0000",
}  # fmt: skip


def _snapshot(*roots: Path) -> dict[str, tuple[int, int, str]]:
    found: dict[str, tuple[int, int, str]] = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(folder, name)
                info = os.lstat(path)
                digest = ""
                if os.path.isfile(path) and not os.path.islink(path):
                    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                found[path] = (info.st_mode, info.st_size, digest)
    return found


def _repository(root: Path, home: Path) -> Path:
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "docs").mkdir()
    (ws / "src" / "app.py").write_text("def main():\n    print(1)  # TODO\n")
    (ws / "src" / "util.py").write_text("x = 1\n")
    (ws / "README.md").write_text("# readme\n")
    (ws / "package.json").write_text('{"name": "x", "version": "1.0", "dependencies": {}}\n')
    (ws / "data.json").write_text('[{"id": 1, "name": "a"}]\n')
    (ws / "data.csv").write_text("a,b\n1,2\n")
    env = {**os.environ, **_GIT_ENV, "HOME": str(home)}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"], ["tag", "v1.2.0"]):
        subprocess.run(["git", "-C", str(ws), *args], check=True, env=env, timeout=30)
    with (ws / "README.md").open("a") as f:
        f.write("more\n")
    return ws


def corpus_lines() -> list[str]:
    """The benign commands, without blank lines and comments (`{NL}`: a line break)."""
    return [
        line.replace("{NL}", "\n").replace("{TAB}", "\t")
        for line in CORPUS.read_text("utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]


def test_allowed_benign_commands_change_nothing(tmp_path: Path) -> None:
    require("bubblewrap")
    from plan_lsp.policy.sandbox import unsandboxed_plan_env

    home = tmp_path / "home"
    home.mkdir()
    ws = _repository(tmp_path, home)
    lines = corpus_lines()
    allowed = [c for c in lines if classify_command(c, roots=[ws], cwd=ws).allowed]
    assert len(allowed) >= 250
    env = unsandboxed_plan_env(home, {**os.environ, "HOME": str(home)})
    jail = [
        shutil.which("bwrap") or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev",
        "--proc", "/proc", "--bind", str(tmp_path), str(tmp_path), "--unshare-net",
        "--die-with-parent", "--chdir", str(ws), "--",
    ]  # fmt: skip
    before = _snapshot(ws, home)
    # One jail for the whole batch: each command in its own bash, in order.
    script = "\n".join(f"bash -c {_quote(c)} </dev/null >/dev/null 2>&1" for c in allowed)
    done = subprocess.run(
        [*jail, "bash", "-c", script], env=env, capture_output=True, timeout=600, check=False
    )
    assert b"bwrap:" not in done.stderr, done.stderr[-2000:]
    after = _snapshot(ws, home)
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    assert changed == [], changed[:20]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@pytest.mark.parametrize("command", ["pip list", "pip3 list --format=json"])
def test_pip_list_runs_with_its_version_check_off(command: str, tmp_path: Path) -> None:
    """pip's check for a newer pip runs other programs (rustc, lsb_release) and writes a cache
    into the home: the plan environment turns it off, so `pip list` needs no flag for it."""
    from plan_lsp.policy.sandbox import unsandboxed_plan_env

    assert classify_command(command, roots=[tmp_path], cwd=tmp_path).allowed
    assert unsandboxed_plan_env(tmp_path)["PIP_DISABLE_PIP_VERSION_CHECK"] == "1"
