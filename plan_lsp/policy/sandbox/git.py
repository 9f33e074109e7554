"""git that works in plan mode and runs no program a repository's configuration names.

Such keys have names the repository chooses (`filter.<name>.clean`), so a plan-mode command
finds a `git` shim first on PATH: it lists the keys git would read and appends one
`--config-env` override per program-naming key, plus fixed ones (command-line configuration
wins). git's exec path mirrors git-core with the shim as its `git` (submodules). Why and
how: docs/security.md, section 6; what cannot be neutralised: `git_hazards`.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, StrictStr

from plan_lsp.policy.sandbox.layout import load_toml, plan_environment, runtime_file, runtime_path


class Overrides(BaseModel):
    """`git.toml`: the last words of keys naming a program, the fixed overrides (key =
    value) and those for keys the repository names (pattern = value)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    program_words: frozenset[StrictStr]
    static: dict[StrictStr, StrictStr]
    dynamic: dict[StrictStr, StrictStr]


_OVERRIDES = load_toml(Overrides, "git.toml")
STATIC_OVERRIDES = tuple(_OVERRIDES.static.items())
DYNAMIC_OVERRIDES = tuple(_OVERRIDES.dynamic.items())
PROGRAM_WORDS = _OVERRIDES.program_words

# Subcommands that would use a diff driver: the shim adds these flags after the name.
DIFF_FAMILY = ("diff", "log", "show", "whatchanged", "diff-tree", "diff-index", "diff-files",
               "format-patch")  # fmt: skip
TEXTCONV_ONLY = ("blame", "annotate", "grep")
NO_DRIVER_FLAGS = ("--no-ext-diff", "--no-textconv")

# Global options that take their value as the next word (git.c handle_options, git 2.39).
GLOBAL_OPTIONS_WITH_VALUE = ("-C", "-c", "--git-dir", "--work-tree", "--namespace",
                             "--super-prefix", "--config-env", "--shallow-file")  # fmt: skip

# Inside bubblewrap: where the shim's directory and git's exec path for it are bound.
SANDBOX_SHIM_DIR = "/run/plan-lsp/bin"
SANDBOX_EXEC_DIR = "/run/plan-lsp/git-exec"
# In the private runtime directory: the host shim, the sandbox shim, and the exec path both
# share (its `git` links to `../bin/git`, the right shim on either side of the bind).
HOST_BIN, SANDBOX_BIN, EXEC_MIRROR = "bin", "sandbox-bin", "git-exec"
_MIRROR_DONE = ".complete"


# No transport at all, whatever the repository's `protocol.<name>.allow` says (it beats
# `protocol.allow`): a read of an object a partial clone lacks would fetch it from the
# promisor remote, and `ext::` runs a command (git 2.44+: no lazy fetch either).
NO_TRANSPORT = {"GIT_ALLOW_PROTOCOL": "none", "GIT_NO_LAZY_FETCH": "1"}
_NO_TRANSPORT = " ".join(f"{k}={v}" for k, v in NO_TRANSPORT.items())


def _value_variables() -> dict[str, str]:
    """One environment variable per distinct override value, for `--config-env`."""
    values = sorted({v for _, v in (*STATIC_OVERRIDES, *DYNAMIC_OVERRIDES)})
    return {f"_PLAN_LSP_GIT_V{n}": value for n, value in enumerate(values)}


def shim_script(real_git: str, bash: str, exec_dir: str) -> str:
    """The shim's text: a fixed template, only the paths vary (`exec_dir`: GIT_EXEC_PATH)."""
    variables = _value_variables()
    by_value = {value: name for name, value in variables.items()}
    exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in variables.items())
    static = " ".join(
        shlex.quote(f"--config-env={key}={by_value[value]}") for key, value in STATIC_OVERRIDES
    )
    cases = "\n".join(
        f'      {pattern}) over+=("--config-env=$name={by_value[value]}") ;;'
        for pattern, value in DYNAMIC_OVERRIDES
    )
    with_value = "|".join(GLOBAL_OPTIONS_WITH_VALUE)
    return f"""#!{bash} -p
# plan-lsp: git with every program a repository's configuration names neutralised.
real={shlex.quote(real_git)}
exec_path={shlex.quote(exec_dir)}
args=("$@")
n=$#
i=0
globals=()
while (( i < n )); do
  a=${{args[i]}}
  case $a in
    {with_value})
      (( i + 1 < n )) || break
      globals+=("$a" "${{args[i+1]}}"); (( i += 2 )) ;;
    --exec-path=*)
      echo "git: --exec-path=<dir> runs programs from <dir>; refused in plan mode" >&2
      exit 128 ;;
    --version) exec "$real" version ;;  # `git --version config ...` would not list it
    -*) globals+=("$a"); (( i += 1 )) ;;
    *) break ;;
  esac
done
if [[ ! -x $exec_path/git ]]; then
  echo "git: the hardened exec path $exec_path is missing, so git was not run" >&2
  exit 128
fi
unset GIT_EXTERNAL_DIFF
export GIT_EXEC_PATH=$exec_path GIT_PAGER=cat GIT_EDITOR=true GIT_SEQUENCE_EDITOR=true \\
  GIT_OPTIONAL_LOCKS=0 GIT_TERMINAL_PROMPT=0 GIT_ASKPASS=true GIT_SSH_COMMAND=false \\
  {_NO_TRANSPORT} {exports}
over=({static})
if ! names=$("$real" "${{globals[@]}}" config --list --name-only 2>/dev/null); then
  echo "git: the git configuration could not be read, so git was not run" >&2
  exit 128
fi
set -f
IFS=$'\\n'
for name in $names; do
  case $name in
{cases}
  esac
done
unset IFS
set +f
extra=()
if (( i < n )); then
  case ${{args[i]}} in
    {"|".join(DIFF_FAMILY)}) extra=({" ".join(NO_DRIVER_FLAGS)}) ;;
    {"|".join(TEXTCONV_ONLY)}) extra=(--no-textconv) ;;
  esac
  exec "$real" "${{globals[@]}}" "${{over[@]}}" "${{args[i]}}" "${{extra[@]}}" "${{args[@]:i+1}}"
fi
exec "$real" "${{globals[@]}}" "${{over[@]}}"
"""


def real_git() -> str | None:
    found = shutil.which("git")
    return os.path.realpath(found) if found else None


@dataclass(frozen=True)
class GitShim:
    """The shim's files on the host."""

    bin: Path  # first on PATH for commands that see the host's paths
    exec_dir: Path  # git's exec path: git-core, with `git` the shim
    sandbox_bin: Path  # bound at SANDBOX_SHIM_DIR in bubblewrap


def git_shim() -> GitShim | None:
    """The shim's files, written again when missing; None without git or bash."""
    texts = _shim_texts()
    if texts is None:
        return None
    host, sandboxed, real_exec = texts
    bin_dir = runtime_file(f"{HOST_BIN}/git", host.encode(), 0o755).parent
    sandbox_bin = runtime_file(f"{SANDBOX_BIN}/git", sandboxed.encode(), 0o755).parent
    exec_dir = runtime_path(EXEC_MIRROR)
    if not (exec_dir / _MIRROR_DONE).exists() or not os.path.lexists(exec_dir / "git"):
        _mirror(real_exec, exec_dir)
    return GitShim(bin_dir, exec_dir, sandbox_bin)


def git_shim_dir() -> Path | None:
    """The directory holding the `git` shim for commands that see the host's paths."""
    shim = git_shim()
    return shim.bin if shim is not None else None


@cache
def _shim_texts() -> tuple[str, str, str] | None:
    """(host shim, sandbox shim, git's own exec path)."""
    git, bash = real_git(), shutil.which("bash")
    if git is None or bash is None:
        return None
    try:
        proc = subprocess.run(
            [git, "--exec-path"], capture_output=True, text=True, env=plan_environment(),
            timeout=10, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    real_exec = proc.stdout.strip()
    if proc.returncode != 0 or not os.path.isabs(real_exec):
        return None
    bash = os.path.realpath(bash)
    host = shim_script(git, bash, str(runtime_path(EXEC_MIRROR)))
    return host, shim_script(git, bash, SANDBOX_EXEC_DIR), real_exec


def _mirror(real_exec: str, target: Path) -> None:
    """`target`: links to git's exec path, `git` the shim; built aside, renamed into place."""
    building = target.with_name(f".{target.name}-{os.getpid()}-{secrets.token_hex(4)}")
    building.mkdir(mode=0o755)
    try:
        with os.scandir(real_exec) as entries:
            for entry in entries:
                if entry.name != "git":
                    os.symlink(os.path.join(real_exec, entry.name), building / entry.name)
        os.symlink(f"../{HOST_BIN}/git", building / "git")
        (building / _MIRROR_DONE).write_bytes(b"")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(building, target)
    except OSError:
        shutil.rmtree(building, ignore_errors=True)  # another thread won, or git-core is gone


# Without a sandbox (`classified`) a command gets a private, empty home, so no program reads
# the user's configuration; these name what a program would read instead of the home's.
_NO_USER_CONFIG = {
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "PIP_CONFIG_FILE": "/dev/null",
    "NPM_CONFIG_USERCONFIG": "/dev/null",
    "XML_CATALOG_FILES": "",
    "WGETRC": "/dev/null",
    # npm takes `globalconfig` from a workspace's .npmrc, but the environment wins.
    "NPM_CONFIG_GLOBALCONFIG": "/dev/null",
    # pip's check for a newer pip runs other programs found on PATH (rustc, lsb_release) and
    # writes a cache into the home.
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
}
_XDG = {"XDG_CONFIG_HOME": ".config", "XDG_CACHE_HOME": ".cache",
        "XDG_DATA_HOME": ".local/share", "XDG_STATE_HOME": ".local/state"}  # fmt: skip
# Toolchains that find their versions through the home: pointed at the user's.
_TOOLCHAIN_HOMES = {"RUSTUP_HOME": ".rustup", "PYENV_ROOT": ".pyenv"}


def unsandboxed_plan_env(home: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a plan-mode command without a sandbox: the allow-list, `home` (a
    fresh, private folder) as HOME, XDG folders and TMPDIR, and the git shim first on PATH."""
    base = os.environ if base is None else base
    shim = git_shim_dir()
    env = plan_environment(base, home=str(home), extra_path=[str(shim)] if shim is not None else [])
    env.update(_NO_USER_CONFIG)
    env.update({name: str(home / rel) for name, rel in _XDG.items()})
    # Temporary files too (`sort` spilling to disk, `tac` copying a pipe): into the private
    # home, removed with it, never into the shared /tmp.
    env["TMPDIR"] = str(home)
    user_home = base.get("HOME", "")
    for name, rel in _TOOLCHAIN_HOMES.items():
        found = base.get(name) or (os.path.join(user_home, rel) if user_home else "")
        if found and os.path.isabs(found) and os.path.isdir(found):
            env[name] = found
    return env


# Fixed overrides for programs that may run git by its path (MCP servers): all but
# `diff.external`, which without the shim's `--no-ext-diff` breaks `git diff`.
_ENVIRONMENT_OVERRIDES = tuple((k, v) for k, v in STATIC_OVERRIDES if k != "diff.external")
_DROPPED_GIT_VARIABLES = ("GIT_EXEC_PATH", "GIT_EXTERNAL_DIFF", "GIT_CONFIG_PARAMETERS",
                          "GIT_PAGER_IN_USE")  # fmt: skip


def hardened_git_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` for a program that runs git itself (an MCP server), with the plan-mode git
    hardening: the shim first on PATH and as git's exec path, and the fixed overrides after
    any in `GIT_CONFIG_COUNT` (so they win) for a git started by its path."""
    out = {k: v for k, v in env.items() if k not in _DROPPED_GIT_VARIABLES} | NO_TRANSPORT
    shim = git_shim()
    if shim is not None:
        path = out.get("PATH") or os.defpath
        out["PATH"] = f"{shim.bin}{os.pathsep}{path}"
        out["GIT_EXEC_PATH"] = str(shim.exec_dir)
    try:
        count = max(int(out.get("GIT_CONFIG_COUNT", "0")), 0)
    except ValueError:
        count = 0
    for n, (key, value) in enumerate(_ENVIRONMENT_OVERRIDES, start=count):
        out[f"GIT_CONFIG_KEY_{n}"] = key
        out[f"GIT_CONFIG_VALUE_{n}"] = value
    out["GIT_CONFIG_COUNT"] = str(count + len(_ENVIRONMENT_OVERRIDES))
    out.update(GIT_PAGER="cat", GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0")
    return out
