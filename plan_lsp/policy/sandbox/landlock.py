"""Landlock fallback (Linux >= 5.13) for machines where user namespaces do not work: the
server computes what the child may touch, the child restricts itself (`landlock_launch.py`).
An allow-list of paths, so hiding a path grants its siblings. docs/security.md, section 4.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
from collections.abc import Iterable, Mapping, Sequence
from functools import cache, lru_cache
from pathlib import Path

from plan_lsp.policy.sandbox.git import git_shim
from plan_lsp.policy.sandbox.landlock_launch import AUDIT_ARCHES
from plan_lsp.policy.sandbox.layout import (
    CPU_SECONDS,
    DATA_KIB,
    FILE_SIZE_KIB,
    MAX_PROCESSES,
    below,
    plan_environment,
    plan_layout,
)

LAUNCHER = Path(__file__).with_name("landlock_launch.py")
# Never readable under landlock, in addition to the layout's homes and secrets.
HIDDEN_SYSTEM_DIRS = ("/tmp", "/var/tmp", "/run", "/dev")
READABLE_DEVICES = ("/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
WRITABLE_DEVICES = ("/dev/null",)


@cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is unavailable."""
    if sys.platform != "linux":
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        abi = int(libc.syscall(444, None, 0, 1))
    except (OSError, AttributeError):
        return 0
    return max(abi, 0)


def seccomp_available() -> bool:
    return platform.machine() in AUDIT_ARCHES


def readable_tree(top: Path, hidden: Iterable[Path], *, fresh: bool = False) -> list[str]:
    """Paths whose union is everything under `top` except `hidden` (and below); `fresh`:
    walked again, not cached (a workspace root, where the user adds files)."""
    hidden_set = frozenset(hidden)
    if fresh:
        return list(_readable_tree.__wrapped__(top, hidden_set))
    return list(_readable_tree(top, hidden_set))


@lru_cache(maxsize=64)
def _readable_tree(top: Path, hidden_set: frozenset[Path]) -> tuple[str, ...]:
    granted: list[str] = []

    def visit(path: Path) -> None:
        if path in hidden_set:
            return
        if not any(below(h, path) for h in hidden_set):
            granted.append(str(path))
            return
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if not entry.is_symlink():  # reached through its target's own grant
                visit(Path(entry.path))

    visit(top)
    return tuple(granted)


def landlock_options(
    workdir: Path,
    roots: Sequence[Path],
    *,
    network: bool,
    scratch: Path | None,
    base_env: Mapping[str, str],
) -> list[str]:
    """The launcher's options: what the child may read and write, its limits."""
    real_workdir = Path(os.path.realpath(workdir))
    layout = plan_layout([real_workdir, *roots], base_env)
    hidden = [
        *layout.hidden_dirs,
        *layout.hidden_files,
        *layout.credentials,
        *(Path(p) for p in HIDDEN_SYSTEM_DIRS),
    ]
    read = readable_tree(Path("/"), hidden)
    for path in layout.toolchains:
        read.extend(readable_tree(path, [*layout.credentials, *layout.hidden_files]))
    for path in layout.roots:
        read.extend(readable_tree(path, [*layout.credentials, *layout.hidden_files], fresh=True))
    shim = git_shim()
    if shim is not None:
        read += [str(shim.bin), str(shim.exec_dir)]
    read.extend(d for d in READABLE_DEVICES if os.path.exists(d))
    options: list[str] = ["--chdir", str(real_workdir)]
    for granted in dict.fromkeys(read):
        options += ["--read", granted]
    if scratch is not None:
        options += ["--write", os.path.realpath(scratch)]
    for device in WRITABLE_DEVICES:
        if os.path.exists(device):
            options += ["--device", device]
    if network:
        options.append("--network")
    options += ["--cpu", str(CPU_SECONDS), "--fsize", str(FILE_SIZE_KIB * 1024)]
    options += ["--nproc", str(MAX_PROCESSES), "--data", str(DATA_KIB * 1024)]
    return options


def landlock_argv(
    workdir: Path,
    argv: Sequence[str],
    *,
    roots: Sequence[Path] = (),
    network: bool = False,
    scratch: Path | None = None,
    base_env: Mapping[str, str] | None = None,
) -> list[str]:
    base_env = os.environ if base_env is None else base_env
    options = landlock_options(workdir, roots, network=network, scratch=scratch, base_env=base_env)
    shim = git_shim()
    env = plan_environment(base_env, extra_path=[str(shim.bin)] if shim else [])
    if scratch is not None:
        env["TMPDIR"] = os.path.realpath(scratch)
    return [
        "/usr/bin/env" if os.path.exists("/usr/bin/env") else "env",
        "-i",
        *(f"{k}={v}" for k, v in env.items()),
        os.path.realpath(sys.executable),
        "-I",  # no PYTHON* variables, no user site, not the working directory on sys.path
        "-S",
        str(LAUNCHER),
        *options,
        "--",
        *argv,
    ]
