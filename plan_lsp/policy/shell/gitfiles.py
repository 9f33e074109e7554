"""Files a repository's git configuration makes an allow-listed git subcommand read.

`git blame` prints the first line of a `blame.ignoreRevsFile` that is not an object name, so
under `classified` such a file must lie inside the workspace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

# (subcommand label, configuration key) pairs: the key names a file that subcommand reads.
FILE_KEYS: tuple[tuple[str, str], ...] = (("git blame", "blame.ignoreRevsFile"),)
_ENV_KEPT = ("PATH", "HOME", "LANG", "LC_ALL", "XDG_CONFIG_HOME")


def files_outside(repo: Path, roots: Sequence[Path], programs: frozenset[str]) -> list[str]:
    """One sentence per configured file, read by one of `programs`, outside `roots`."""
    keys = [key for label, key in FILE_KEYS if label in programs]
    git = shutil.which("git")
    if not keys or git is None:
        return []
    real_roots = [os.path.realpath(r) for r in roots]
    env = {k: v for k, v in os.environ.items() if k in _ENV_KEPT}
    found: list[str] = []
    for key in keys:
        try:
            proc = subprocess.run(
                [git, "-C", str(repo), "config", "--get-all", "-z", key],
                capture_output=True, env=env, timeout=10, check=False,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            proc = None
        if proc is None or proc.returncode not in (0, 1):  # 1: the key is not set
            return [f"the git configuration of {repo} could not be read for `{key}`"]
        for value in proc.stdout.decode("utf-8", "replace").split("\0"):
            if not value:
                continue
            real = os.path.realpath(os.path.join(repo, os.path.expanduser(value)))
            if not any(real == r or real.startswith(r.rstrip("/") + "/") for r in real_roots):
                found.append(
                    f"{key}={value} names a file outside the workspace, which git would read "
                    "and partly print"
                )
    return found
