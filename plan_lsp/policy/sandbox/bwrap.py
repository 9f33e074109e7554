"""Bubblewrap command lines for the plan profile (read-only, hidden secrets, private scratch)
and the build profile (the host writable but `.plan-lsp` and the files that run code later).
Why each flag: docs/security.md. Both start with `env -i`: bwrap's own environment is
/proc/1/environ inside.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

from plan_lsp.policy.sandbox.build_binds import PLACEHOLDERS_SCRIPT, autorun_binds
from plan_lsp.policy.sandbox.git import SANDBOX_EXEC_DIR, SANDBOX_SHIM_DIR, git_shim
from plan_lsp.policy.sandbox.landlock import LAUNCHER, landlock_abi
from plan_lsp.policy.sandbox.landlock_launch import AUDIT_ARCHES, seccomp_bytes
from plan_lsp.policy.sandbox.layout import (
    CPU_SECONDS,
    DATA_KIB,
    FILE_SIZE_KIB,
    MAX_PROCESSES,
    NOBODY,
    SMALL_TMPFS_BYTES,
    TMPFS_BYTES,
    below,
    own_places,
    plan_environment,
    plan_layout,
    runtime_file,
)

STATE_DIR_NAME = ".plan-lsp"

# A fixed string; the command only ever travels as separate argv words after it.
_LIMITS = (
    f"ulimit -c 0 2>/dev/null; ulimit -t {CPU_SECONDS} 2>/dev/null; "
    f"ulimit -f {FILE_SIZE_KIB} 2>/dev/null; ulimit -d {DATA_KIB} 2>/dev/null; "
)
LIMITS_SCRIPT = _LIMITS + f'ulimit -u {MAX_PROCESSES} 2>/dev/null; exec "$@"'
# Without a sandbox, no process count: outside a user namespace it counts the user's all.
HOST_LIMITS_SCRIPT = _LIMITS + 'exec "$@"'


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


# Options newer than bubblewrap 0.6 (Ubuntu 22.04): used when this bwrap has them.
OPTIONAL_FEATURES = ("--disable-userns", "--size")


@cache
def bwrap_features() -> frozenset[str]:
    """Which of OPTIONAL_FEATURES this bwrap understands (from its --help)."""
    bwrap = bwrap_path()
    if bwrap is None:
        return frozenset()
    try:
        proc = subprocess.run(
            [bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(f for f in OPTIONAL_FEATURES if f in proc.stdout + proc.stderr)


def missing_features() -> list[str]:
    have = bwrap_features()
    return [f for f in OPTIONAL_FEATURES if f not in have]


def _tmpfs(path: str, size: int) -> list[str]:
    sized = ["--size", str(size)] if "--size" in bwrap_features() else []
    return [*sized, "--tmpfs", path]


def _program(name: str) -> str:
    found = shutil.which(name)
    return os.path.realpath(found) if found else name


def limited(argv: Sequence[str]) -> list[str]:
    """`argv` run under the sandbox's resource limits."""
    return [_program("bash"), "-c", LIMITS_SCRIPT, "plan-lsp-limits", *argv]


def host_limited(argv: Sequence[str]) -> list[str]:
    """`argv` run under the sandbox's CPU, memory, file-size and core limits, without one."""
    return [_program("bash"), "-c", HOST_LIMITS_SCRIPT, "plan-lsp-limits", *argv]


def _env_prefix(env: Mapping[str, str]) -> list[str]:
    return [_program("env"), "-i", *(f"{k}={v}" for k, v in env.items())]


# Opens the seccomp filter on fd 3 for `bwrap --seccomp 3`, then execs the rest.
SECCOMP_PRELUDE = 'exec 3<"$1" || exit 126; shift; exec "$@"'
# Denied in the plan profile (why: docs/security.md, section 3).
PLAN_SECCOMP_GROUPS = ["keyrings", "unix_sockets", "io_uring"]

# Landlock stacked inside the plan profile (see `_landlock_inside`).
SANDBOX_LAUNCHER = "/run/plan-lsp/landlock_launch.py"
PRIVATE_TMP = "/run/plan-lsp/tmp"
SCRATCH_MOUNTS = ("/tmp", "/var/tmp", "/run", "/dev")


def _seccomp_prefix() -> tuple[list[str], list[str]]:
    """(command prefix, bwrap options) loading the plan profile's seccomp filter, if any."""
    machine = os.uname().machine
    if machine not in AUDIT_ARCHES:
        return [], []
    bpf = runtime_file("plan.bpf", seccomp_bytes(machine, PLAN_SECCOMP_GROUPS), 0o600)
    # -p: no $BASH_ENV from whatever environment the caller spawns this with.
    prefix = [_program("bash"), "-p", "-c", SECCOMP_PRELUDE, "plan-lsp-seccomp", str(bpf)]
    return prefix, ["--seccomp", "3"]


def _landlock_inside(host_trees: Sequence[Path]) -> tuple[list[str], list[str], str | None]:
    """(bwrap options, launcher argv prefix, private TMPDIR or None): Landlock inside, since
    a read-only mount does not stop opening a host FIFO for writing. A scratch mount with a
    host tree bound below it is not granted (a grant crosses mounts): PRIVATE_TMP instead."""
    if landlock_abi() < 1:
        return [], [], None
    writable = [
        m for m in SCRATCH_MOUNTS
        if not any(t == Path(m) or below(t, Path(m)) for t in host_trees)
    ]  # fmt: skip
    options = ["--ro-bind", str(LAUNCHER), SANDBOX_LAUNCHER]
    private = None
    if "/tmp" not in writable:
        private = PRIVATE_TMP
        options += _tmpfs(PRIVATE_TMP, TMPFS_BYTES)
        writable.append(PRIVATE_TMP)
    launcher = [os.path.realpath(sys.executable), "-I", "-S", SANDBOX_LAUNCHER,
                "--filesystem-only", "--read", "/"]  # fmt: skip
    for path in writable:
        launcher += ["--write", path]
    return options, [*launcher, "--"], private


def _all_roots(workdir: Path, roots: Sequence[Path]) -> list[Path]:
    real_workdir = Path(os.path.realpath(workdir))
    real_roots = [Path(os.path.realpath(r)) for r in roots]
    if not any(r == real_workdir or below(real_workdir, r) for r in real_roots):
        real_roots.insert(0, real_workdir)
    return list(dict.fromkeys(real_roots))


def plan_argv(
    workdir: Path,
    argv: Sequence[str],
    *,
    roots: Sequence[Path] = (),
    network: bool = False,
    base_env: Mapping[str, str] | None = None,
) -> list[str]:
    base_env = os.environ if base_env is None else base_env
    bwrap = bwrap_path() or "bwrap"
    all_roots = _all_roots(workdir, roots)
    layout = plan_layout(all_roots, base_env)
    shim = git_shim()
    env = plan_environment(base_env, extra_path=[SANDBOX_SHIM_DIR] if shim else [])
    seccomp_prefix, seccomp_options = _seccomp_prefix()
    landlock_options, launcher, private_tmp = _landlock_inside([*layout.toolchains, *layout.roots])
    if private_tmp is not None:
        env["HOME"] = env["TMPDIR"] = private_tmp
    args = [
        bwrap,
        *seccomp_options,  # no kernel keyrings
        "--unshare-all",  # user, ipc, pid, net, uts, cgroup
        *(["--share-net"] if network else []),
        "--unshare-user",  # required, not just "if possible"
        # no nested namespaces to work from (bubblewrap >= 0.8)
        *(["--disable-userns"] if "--disable-userns" in bwrap_features() else []),
        "--uid", str(NOBODY),
        "--gid", str(NOBODY),
        "--cap-drop", "ALL",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",  # this pid namespace only: the server is not in it
        *_tmpfs("/tmp", TMPFS_BYTES),
        *_tmpfs("/var/tmp", TMPFS_BYTES),
        *_tmpfs("/run", SMALL_TMPFS_BYTES),  # host sockets unreachable
    ]  # fmt: skip
    for hidden in layout.hidden_dirs:
        args += _tmpfs(str(hidden), SMALL_TMPFS_BYTES)
    for hidden in layout.hidden_files:
        args += ["--ro-bind", "/dev/null", str(hidden)]
    for path in (*layout.toolchains, *layout.roots):
        args += ["--ro-bind", str(path), str(path)]
    for secret in layout.credentials:
        args += (
            ["--tmpfs", str(secret)] if secret.is_dir() else ["--ro-bind", "/dev/null", str(secret)]
        )
    if shim is not None:
        args += ["--ro-bind", str(shim.sandbox_bin), SANDBOX_SHIM_DIR]
        args += ["--ro-bind", str(shim.exec_dir), SANDBOX_EXEC_DIR]
    args += landlock_options
    args += [
        "--chdir", os.path.realpath(workdir),
        "--die-with-parent",
        "--new-session",  # no controlling terminal: no TIOCSTI into the user's shell
        "--",
        *launcher,  # nothing but scratch space opened for writing (FIFOs included)
        *limited(argv),
    ]  # fmt: skip
    return [*seccomp_prefix, *_env_prefix(env), *args]


def ensure_state_dirs(roots: Sequence[Path]) -> list[Path]:
    """Every `<root>/.plan-lsp`, created when missing so there is something to bind."""
    found = []
    for root in roots:
        path = Path(root) / STATE_DIR_NAME
        if not os.path.lexists(path):
            try:
                path.mkdir(mode=0o755)
            except OSError:
                continue
        if os.path.exists(path):  # a dangling link protects nothing and cannot be bound
            found.append(path)
    return found


def build_argv(
    workdir: Path,
    argv: Sequence[str],
    *,
    roots: Sequence[Path] = (),
) -> list[str]:
    """The build profile; the caller passes the environment (argv is readable by every user)."""
    bwrap = bwrap_path() or "bwrap"
    args = [
        bwrap,
        "--unshare-user",  # a mount namespace of our own, without privileges
        "--unshare-pid",  # a daemon cannot outlive the command
        "--uid", str(os.getuid()),
        "--gid", str(os.getgid()),
        "--cap-drop", "ALL",  # nobody inside may unmount or remount the binds below
        "--bind", "/", "/",
        "--dev-bind", "/dev", "/dev",
        "--proc", "/proc",  # the namespace's own processes
    ]  # fmt: skip
    all_roots = _all_roots(workdir, roots)
    for state in ensure_state_dirs(all_roots):
        args += ["--ro-bind", str(state), str(state)]
    for own in own_places(all_roots, os.environ):
        args += ["--ro-bind", str(own), str(own)]
    autorun, made, absent = autorun_binds(workdir, argv, all_roots)
    args += autorun
    args += [
        "--chdir", os.path.realpath(workdir),
        "--die-with-parent",
        "--new-session",
        "--",
        *argv,
    ]  # fmt: skip
    if not made and not absent:
        return args
    return [
        _program("bash"),
        "-c",
        PLACEHOLDERS_SCRIPT,
        "plan-lsp-build",
        str(len(made)),
        *made,
        str(len(absent)),
        *absent,
        *args,
    ]
