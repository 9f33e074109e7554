"""The second wall behind the shell classifier: a read-only, network-less bubblewrap jail.

Recipe and traps: drop all capabilities and run as nobody (a sandboxed root could remount
`/` read-write), and put tmpfs over /tmp, /run and /var/tmp so host Unix sockets there are
unreachable.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

log = logging.getLogger(__name__)

BUBBLEWRAP = "bubblewrap"
_PROBE_TIMEOUT_S = 10.0


def _bwrap() -> str | None:
    return shutil.which("bwrap")


def sandbox_argv(workdir: Path, argv: list[str]) -> list[str]:
    """`argv` wrapped so it runs in `workdir` with the whole filesystem read-only,
    no network, no capabilities, as nobody, with a private scratch /tmp."""
    bwrap = _bwrap() or "bwrap"
    root = str(Path(workdir).resolve())
    return [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--uid", "65534",
        "--gid", "65534",
        "--cap-drop", "ALL",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--tmpfs", "/run",
        "--tmpfs", "/var/tmp",
        "--ro-bind", root, root,
        "--chdir", root,
        "--die-with-parent",
        "--new-session",
        "--setenv", "HOME", "/tmp",
        "--",
        *argv,
    ]  # fmt: skip


@cache
def sandbox_kind() -> str | None:
    """Returns "bubblewrap" when a sandbox is installed and really works here, else None.

    Probed once: bwrap can be installed yet unusable (no user namespaces in a container)."""
    if _bwrap() is None:
        log.info("shell sandbox: bwrap not found; shell commands rely on classification alone")
        return None
    with tempfile.TemporaryDirectory(prefix="plan-lsp-probe-") as tmp:
        target = Path(tmp)
        try:
            probe = subprocess.run(
                sandbox_argv(target, ["/bin/sh", "-c", "touch probe 2>/dev/null; echo ok"]),
                capture_output=True,
                timeout=_PROBE_TIMEOUT_S,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("shell sandbox: bwrap probe failed to start: %s", exc)
            return None
        wrote = (target / "probe").exists()
    if probe.returncode != 0 or probe.stdout.strip() != b"ok":
        log.warning(
            "shell sandbox: bwrap is installed but does not work here (exit %s): %s",
            probe.returncode,
            probe.stderr.decode("utf-8", "replace").strip()[:300],
        )
        return None
    if wrote:
        log.warning("shell sandbox: bwrap let a write through; not using it")
        return None
    return BUBBLEWRAP
