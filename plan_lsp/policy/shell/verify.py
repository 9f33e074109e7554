"""Checks of a whole command, once its options and operands are read (`verify = "…"` in
`programs.toml`): what depends on several options at once, or on a file the command will
read its own instructions from."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plan_lsp.policy.shell.lexer import SWord
    from plan_lsp.policy.shell.paths import PathPolicy

# A checksum list is read before the command runs; a larger one is refused.
MAX_CHECK_LIST_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Context:
    policy: PathPolicy
    # The directory relative paths start from.
    base: str
    seen: frozenset[str]
    operands: Sequence[SWord]


# -- checksum lists ------------------------------------------------------------------------
# `md5sum -c LIST` opens every file LIST names, and LIST comes from the workspace: each name
# must be a file the command could read directly.
_GNU_LINE = re.compile(r"([0-9A-Fa-f]+) [ *](.*)\Z", re.S)
_BSD_LINE = re.compile(r"([A-Za-z0-9-]+) ?\((.*)\) ?= ?([0-9A-Za-z+/=]+)\Z", re.S)


_ESCAPES = {"n": "\n", "\\": "\\", "r": "\r"}
_ESCAPED = re.compile(r"\\(.)", re.S)


def _unescape(name: str) -> str:
    return _ESCAPED.sub(lambda m: _ESCAPES.get(m.group(1), m.group(0)), name)


def _checksum_list(ctx: Context) -> str | None:
    if not ctx.seen & {"-c", "--check"}:
        return None
    from plan_lsp.policy.safe_fs import WriteRefused, read_file_bytes

    if not ctx.operands:
        return (
            "`--check` without a file reads the list of files to open from standard input, "
            "which cannot be checked beforehand"
        )
    for word in ctx.operands:
        if word.glob or word.value == "-":
            return (
                f"`{word.text}`: with `--check` each list must be named as one file, so "
                "that the files it names can be checked beforehand"
            )
        full = Path(ctx.policy.resolve(word.value, ctx.base))
        try:
            data = read_file_bytes(full, max_bytes=MAX_CHECK_LIST_BYTES, follow_link=True)
        except (WriteRefused, OSError) as exc:
            return f"`{word.text}`: the checksum list cannot be read beforehand ({exc})"
        if data is None:
            continue  # the program reports the missing file itself
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return f"`{word.text}`: the checksum list is not UTF-8 text"
        for number, line in enumerate(text.split("\n"), 1):
            line = line.removesuffix("\r")
            if not line:
                continue
            escaped = line.startswith("\\")
            body = line[1:] if escaped else line
            # Both readings, when both fit: the program opens one of them.
            names = [m.group(2) for m in (_BSD_LINE.match(body), _GNU_LINE.match(body)) if m]
            if not names:
                return (
                    f"`{word.text}` line {number} is not a checksum line this check can read, "
                    "so the file it names is unknown"
                )
            for name in names:
                if escaped:
                    name = _unescape(name)
                problem = ctx.policy.read_problem(name, ctx.base)
                if problem is not None:
                    return f"`{word.text}` line {number} names a file to read: {problem}"
    return None


# -- unzip --------------------------------------------------------------------------------
def _unzip(ctx: Context) -> str | None:
    if not ctx.operands:
        return None
    archive = ctx.operands[0]
    if any(c in archive.value for c in "*?["):
        return (
            f"`{archive.text}`: unzip expands wildcards in the archive name itself, "
            "beyond what this check sees; name one archive"
        )
    # unzip also tries NAME.zip and NAME.ZIP.
    for other in (archive.value + ".zip", archive.value + ".ZIP"):
        problem = ctx.policy.read_problem(other, ctx.base)
        if problem is not None:
            return f"`{archive.text}` (unzip also opens `{other}`): {problem}"
    return None


# -- test -----------------------------------------------------------------------------------
_TEST_FILE_UNARY = frozenset("-a -b -c -d -e -f -g -h -k -p -r -s -u -w -x -G -L -N -O -S".split())
_TEST_FILE_BINARY = frozenset({"-nt", "-ot", "-ef"})


def _test_expr(ctx: Context) -> str | None:
    words = [w.value for w in ctx.operands]
    for k, value in enumerate(words):
        if value in ("-v", "-R"):
            return (
                f"`test` with `{value}` looks up a variable, and bash evaluates an array "
                "subscript in its name as arithmetic, which can run commands"
            )
        files: list[str] = []
        if value in _TEST_FILE_UNARY and k + 1 < len(words):
            files.append(words[k + 1])
        if value in _TEST_FILE_BINARY:
            files += words[max(k - 1, 0) : k] + words[k + 1 : k + 2]
        for name in files:
            problem = ctx.policy.read_problem(name, ctx.base)
            if problem is not None:
                return f"`test {value} {name}`: {problem}"
    return None


# -- programs that open URLs ----------------------------------------------------------------
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _no_urls(ctx: Context) -> str | None:
    for word in ctx.operands:
        if _URL.match(word.value):
            return (
                f"`{word.text}` looks like a URL, which the program fetches over the network "
                "(or from another file)"
            )
    return None


# -- git config -----------------------------------------------------------------------------
_GIT_CONFIG_SCOPES = frozenset({"--local", "--worktree", "--file", "-f", "--blob"})
_GIT_CONFIG_LISTS = frozenset({"--list", "-l", "--get-regexp"})
# Subcommand names of newer git (`git config set`): never an operand here.
_GIT_CONFIG_SUBCOMMANDS = frozenset(
    {"get", "set", "unset", "list", "edit", "rename-section", "remove-section"}
)
# Keys whose values say how a repository is set up, and never hold credentials: the only
# ones read without `--local` (without a scope git reads every configuration file, the
# user's own and every file a repository's `include.path` names, e.g. a credentials file in
# INI syntax).
_GIT_CONFIG_KEYS = re.compile(
    r"(core\.[A-Za-z]+|user\.(name|email)|init\.defaultbranch"
    r"|remote\.[^\s]+\.(url|pushurl|fetch|push|tagopt)|branch\.[^\s]+\.(remote|merge|rebase)"
    r"|(pull|push|fetch|merge|rebase|diff|log|status|commit|tag|color|advice|help|blame"
    r"|column|format|gc|pack|index|feature|protocol|submodule|lfs)\.[A-Za-z.\-_/]+)\Z",
    re.I,
)
_SECRETISH = re.compile(r"token|pass|secret|auth|key|cred|cookie|header", re.I)


_INCLUDE = re.compile(rb"^[ \t]*\[[ \t]*include(if)?\b", re.I | re.M)


def _repository_includes(ctx: Context) -> str | None:
    """Why the repository's own configuration may pull in other files (`include.path`,
    `includeIf`), or None. Values from such a file are printed as the repository's own: a
    sibling repository's `.git/config` brings its remote URL, token and all."""
    from plan_lsp.policy.safe_fs import WriteRefused, read_file_bytes

    folder = Path(ctx.base)
    for candidate in (folder, *folder.parents):
        dot_git = candidate / ".git"
        if dot_git.is_symlink() or (dot_git.exists() and not dot_git.is_dir()):
            return f"{dot_git} is not a plain folder, so its configuration cannot be checked"
        if not dot_git.is_dir():
            continue
        for name in ("config", "config.worktree"):
            try:
                data = read_file_bytes(dot_git / name, max_bytes=MAX_CHECK_LIST_BYTES)
            except (WriteRefused, OSError) as exc:
                return f"{dot_git / name} cannot be checked ({exc})"
            if data is not None and _INCLUDE.search(data):
                return (
                    f"{dot_git / name} includes other files (`include.path`/`includeIf`), "
                    "whose values git prints as the repository's own"
                )
        return None
    return None


def _git_remote_urls(ctx: Context) -> str | None:
    if ctx.seen & {"-v", "--verbose", "--push", "--all"} or ctx.operands:
        problem = _repository_includes(ctx)
        if problem is not None:
            return f"remote URLs may come from another file: {problem}"
    return None


def _git_config(ctx: Context) -> str | None:
    for word in ctx.operands:
        if word.value in _GIT_CONFIG_SUBCOMMANDS:
            return (
                f"`{word.text}` names a `git config` subcommand of newer git versions, which "
                "may change the configuration"
            )
    scoped = bool(ctx.seen & _GIT_CONFIG_SCOPES)
    if scoped:
        return None
    listing = ctx.seen & _GIT_CONFIG_LISTS
    if listing:
        option = sorted(listing)[0]
        return (
            f"`{option}` without `--local` (or `--file FILE` in the workspace) prints every "
            "configuration file git reads: the user's own, outside the workspace, and any "
            "file a repository's `include.path` names (a credentials file in INI syntax)"
        )
    key = ctx.operands[0].value if ctx.operands else ""
    if not _GIT_CONFIG_KEYS.match(key) or _SECRETISH.search(key):
        return (
            f"`{key}`: without `--local` git reads this key from every configuration file, "
            "also outside the workspace (the user's own, files a repository includes); only "
            "keys that describe the repository's setup are read that way, add `--local`"
        )
    problem = _repository_includes(ctx)
    if problem is not None:
        return f"`{key}` without `--local`: {problem}"
    return None


# -- git var ---------------------------------------------------------------------------------
_GIT_VARS = frozenset(
    {
        "GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
        "GIT_PAGER", "GIT_DEFAULT_BRANCH", "GIT_SHELL_PATH", "GIT_ATTR_SYSTEM",
        "GIT_ATTR_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL",
    }
)  # fmt: skip


def _git_var(ctx: Context) -> str | None:
    for word in ctx.operands:
        if word.value not in _GIT_VARS:
            known = ", ".join(sorted(_GIT_VARS))
            return f"`{word.text}` is not a variable `git var` prints ({known})"
    return None


# -- walkers that read ignore files above where they start -----------------------------------
# rg and fd read these in every folder above the one they search, up to `/`, whatever
# `--no-ignore-parent` says (rg 13, fd 8.6: traced), and print each line they cannot parse;
# `.git` stands for its `info/exclude`. Above a workspace root they lie outside it.
PARENT_IGNORE_FILES = (".gitignore", ".ignore", ".rgignore", ".fdignore", ".git")


def _parent_ignore_files(ctx: Context) -> str | None:
    for root in ctx.policy.roots:
        for folder in Path(root).parents:
            for name in PARENT_IGNORE_FILES:
                if os.path.lexists(folder / name):
                    return (
                        f"{folder / name} lies above the workspace, outside it: this program "
                        "reads the ignore files of every folder above the one it searches "
                        "and prints the lines it cannot parse (the agent's own grep tool "
                        "searches without it)"
                    )
    return None


VERIFIERS: dict[str, Callable[[Context], str | None]] = {
    "checksum_list": _checksum_list,
    "unzip": _unzip,
    "no_urls": _no_urls,
    "test_expr": _test_expr,
    "git_config": _git_config,
    "git_var": _git_var,
    "git_remote_urls": _git_remote_urls,
    "parent_ignore_files": _parent_ignore_files,
}


def verify_command(
    name: str,
    policy: PathPolicy,
    base: str,
    seen: set[str],
    operands: Sequence[SWord],
) -> str | None:
    check = VERIFIERS.get(name)
    if check is None:
        return f"has no whole-command check `{name}`"
    return check(Context(policy, base, frozenset(seen), operands))
