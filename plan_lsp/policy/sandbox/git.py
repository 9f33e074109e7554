"""git that works in plan mode and runs no program a repository's configuration names.

A repository (its `.git/config`, anything that file includes, its `.gitattributes`) can name
programs git runs during ordinary reads: `core.fsmonitor` on every index refresh, clean and
smudge filters when `status`/`diff` compare a dirty file, textconv and external diff drivers
for `diff`/`log -p`/`show`/`blame`, hooks when an index is written, aliases, pagers, gpg for
`log.showSignature`. Setting `diff.external` to an empty string (the old hardening) breaks
`git diff` on any dirty tree, and names chosen by the repository (`filter.<name>.clean`)
cannot be overridden by a fixed list.

So a plan-mode command finds a `git` shim first on PATH. The shim lists the configuration
names git would read for this very invocation (same `-C`/`-c`/`--git-dir` options) and
appends, after the caller's own global options, one `--config-env` override per
program-naming key plus fixed ones (`core.fsmonitor=false`, `core.hooksPath=/dev/null`,
`protocol.allow=never`, ...); diff-family subcommands get `--no-ext-diff --no-textconv`.
`--config-env` is used instead of `-c` because subsection names may contain `=`. Command-line
configuration is read last, so these overrides beat every file. Keys that cannot be
neutralised this way are reported by `git_config_hazards` for the gate to refuse on.
"""

from __future__ import annotations

import fnmatch
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from plan_lsp.policy.sandbox.layout import plan_environment, runtime_file

# Fixed overrides: (key, value).
STATIC_OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("core.askPass", "true"),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("core.alternateRefsCommand", ""),
    ("core.untrackedCache", "false"),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("diff.ignoreSubmodules", "all"),
    # `git diff` rewrites the index to refresh stat data, whatever GIT_OPTIONAL_LOCKS says.
    ("diff.autoRefreshIndex", "false"),
    ("submodule.recurse", "false"),
    ("protocol.allow", "never"),
    ("log.showSignature", "false"),
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.ssh.defaultKeyCommand", ""),
    ("sequence.editor", "true"),
    ("help.autoCorrect", "0"),
    ("help.browser", ""),
    ("web.browser", ""),
    ("man.viewer", "man"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)

# Keys whose names the repository chooses, matched on git's canonical form (section and key
# lower-case, subsection as written): (pattern, value).
DYNAMIC_OVERRIDES: tuple[tuple[str, str], ...] = (
    ("diff.*.textconv", ""),
    ("diff.*.command", ""),
    ("diff.*.cachetextconv", "false"),
    ("filter.*.clean", ""),
    ("filter.*.smudge", ""),
    ("filter.*.process", ""),
    ("filter.*.required", "false"),
    ("merge.*.driver", ""),
    ("alias.*", ""),
    ("difftool.*.cmd", ""),
    ("difftool.*.path", ""),
    ("mergetool.*.cmd", ""),
    ("mergetool.*.path", ""),
    ("man.*.cmd", ""),
    ("man.*.path", ""),
    ("browser.*.cmd", ""),
    ("browser.*.path", ""),
    ("credential.*.helper", ""),
    ("remote.*.uploadpack", ""),
    ("remote.*.receivepack", ""),
    ("remote.*.proxy", ""),
    ("http.*.proxy", ""),
)

# Subcommands that would use a diff driver: the shim adds these flags after the name.
DIFF_FAMILY = ("diff", "log", "show", "whatchanged", "diff-tree", "diff-index", "diff-files",
               "format-patch")  # fmt: skip
TEXTCONV_ONLY = ("blame", "annotate", "grep")
NO_DRIVER_FLAGS = ("--no-ext-diff", "--no-textconv")

# Global options that take their value as the next word (git.c handle_options, git 2.39).
GLOBAL_OPTIONS_WITH_VALUE = ("-C", "-c", "--git-dir", "--work-tree", "--namespace",
                             "--super-prefix", "--config-env", "--shallow-file")  # fmt: skip

# Last components of keys that name a program somewhere in git; a key ending so that no
# override above covers is a hazard.
PROGRAM_WORDS = frozenset({
    "command", "cmd", "program", "helper", "textconv", "clean", "smudge", "process", "driver",
    "uploadpack", "receivepack", "sshcommand", "gitproxy", "proxy", "hookspath", "fsmonitor",
    "editor", "pager", "askpass", "external", "viewer", "browser", "sendmailcmd", "smtpserver",
    "alternaterefscommand", "packobjectshook", "defaultkeycommand", "vcs", "difffilter",
})  # fmt: skip

SANDBOX_SHIM_DIR = "/run/plan-lsp/bin"


def _value_variables() -> dict[str, str]:
    """One environment variable per distinct override value, for `--config-env`."""
    values = sorted({v for _, v in (*STATIC_OVERRIDES, *DYNAMIC_OVERRIDES)})
    return {f"_PLAN_LSP_GIT_V{n}": value for n, value in enumerate(values)}


def shim_script(real_git: str, bash: str) -> str:
    """The shim's text: a fixed template; only the two absolute program paths vary."""
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
    -*) globals+=("$a"); (( i += 1 )) ;;
    *) break ;;
  esac
done
unset GIT_EXTERNAL_DIFF GIT_EXEC_PATH
export GIT_PAGER=cat GIT_EDITOR=true GIT_SEQUENCE_EDITOR=true GIT_OPTIONAL_LOCKS=0 \\
  GIT_TERMINAL_PROMPT=0 GIT_ASKPASS=true GIT_SSH_COMMAND=false {exports}
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


def git_shim_dir() -> Path | None:
    """The private directory holding the `git` shim, or None when git or bash is not
    installed (then there is no git to protect)."""
    text = _shim_text()
    if text is None:
        return None
    return runtime_file("bin/git", text.encode(), 0o755).parent


@cache
def _shim_text() -> str | None:
    git, bash = real_git(), shutil.which("bash")
    if git is None or bash is None:
        return None
    return shim_script(git, os.path.realpath(bash))


def unsandboxed_plan_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a plan-mode command run without a sandbox (`classified`): the
    allow-list environment with the real HOME and the git shim first on PATH."""
    base = os.environ if base is None else base
    shim = git_shim_dir()
    return plan_environment(
        base,
        home=base.get("HOME", "/tmp") or "/tmp",
        extra_path=[str(shim)] if shim is not None else [],
    )


def _covered(name: str) -> bool:
    lowered = name.lower()
    if any(lowered == key.lower() for key, _ in STATIC_OVERRIDES):
        return True
    return any(fnmatch.fnmatchcase(name, pattern) for pattern, _ in DYNAMIC_OVERRIDES)


def _config_entries(repo: Path, git: str) -> list[tuple[str, str, str]] | None:
    """(origin, name, value) for every configuration entry git reads in `repo`."""
    env = plan_environment(home=os.environ.get("HOME", "/tmp") or "/tmp")
    try:
        proc = subprocess.run(
            [git, "-C", str(repo), "config", "--list", "--show-origin", "-z"],
            capture_output=True,
            env=env,
            timeout=10,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    fields = proc.stdout.decode("utf-8", "replace").split("\0")
    entries: list[tuple[str, str, str]] = []
    for origin, item in zip(fields[0::2], fields[1::2], strict=False):
        name, _, value = item.partition("\n")
        entries.append((origin, name, value))
    return entries


def _git_dir(repo: Path, git: str) -> Path | None:
    try:
        proc = subprocess.run(
            [git, "-C", str(repo), "rev-parse", "--absolute-git-dir"],
            capture_output=True,
            text=True,
            env=plan_environment(),
            timeout=10,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    line = proc.stdout.strip()
    return Path(line) if proc.returncode == 0 and line else None


def git_config_hazards(repo: Path) -> list[str]:
    """What in `repo`'s git setup the shim cannot neutralise, one sentence per finding,
    naming the key and the file it comes from. Empty when git runs safely there (or `repo`
    is not a repository). A gate without a sandbox refuses git commands while this is
    non-empty."""
    git = real_git()
    if git is None or not os.path.isdir(repo):
        return []
    repo = Path(os.path.realpath(repo))
    entries = _config_entries(repo, git)
    if entries is None:
        return ["the git configuration could not be read, so it cannot be checked"]
    hazards: list[str] = []
    for origin, name, value in entries:
        last = name.rsplit(".", 1)[-1].lower()
        if name.lower() == "core.worktree":
            hazards.append(
                f"{name}={value} ({origin}) moves the work tree outside the checked paths"
            )
        elif last in PROGRAM_WORDS and not _covered(name):
            hazards.append(f"{name} ({origin}) names a program git may run")
    git_dir = _git_dir(repo, git)
    if git_dir is not None and repo not in (git_dir, *git_dir.parents):
        hazards.append(f"the git directory {git_dir} lies outside {repo}")
    if git_dir is not None:
        hazards.extend(_alternates(git_dir, repo))
    return hazards


def _alternates(git_dir: Path, repo: Path) -> list[str]:
    path = git_dir / "objects" / "info" / "alternates"
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        target = Path(os.path.realpath(git_dir / "objects" / line))
        if repo not in (target, *target.parents):
            found.append(f"objects/info/alternates reads objects from {target}, outside {repo}")
    return found
