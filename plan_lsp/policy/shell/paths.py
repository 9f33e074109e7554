"""Which files a `classified` command may read: inside the roots (after links) but outside
what the plan sandbox hides there (`hidden_places`), nor a folder holding such a place (a
recursive search would read it), plus a few harmless system files. Paths are resolved at
classification; under `classified` nothing can change the tree before the run.
"""

from __future__ import annotations

import copy
import fnmatch
import os
import re
import stat
from collections.abc import Sequence
from functools import cached_property, lru_cache
from pathlib import Path

from plan_lsp.policy.sandbox.layout import HiddenRules, hidden_rules

# A glob that matches more names than this is not expanded for checking.
MAX_GLOB_MATCHES = 2000
# What the output of `$(git rev-parse --verify REV)` and the like stands for while a command is
# checked (`compound.py`): a revision for git, never a file to read (a repository could ship a
# link named like the object name its history will print).
OBJECT_NAME_PLACEHOLDER = "0" * 40
_GLOB_ESCAPE = re.compile(r"\[(.)\]", re.S)


@lru_cache(maxsize=64)
def _real(path: str) -> str:
    """realpath of a root or working directory (these do not move under a session)."""
    return os.path.realpath(path)


class PathPolicy:
    def __init__(
        self, roots: Sequence[str | Path], cwd: str | Path, harmless: frozenset[str]
    ) -> None:
        self.roots = tuple(_real(os.fspath(r)) for r in roots)
        self.prefixes = tuple(r if r.endswith("/") else r + "/" for r in self.roots)
        self.cwd = _real(os.fspath(cwd))
        self.harmless = harmless
        # The PATH programs are looked up in (checked for directories the workspace controls).
        self.path_variable = os.environ.get("PATH", "")

    @cached_property
    def hidden(self) -> HiddenRules:
        """What the plan sandbox hides inside the roots (`layout.hidden_rules`)."""
        return hidden_rules(self.roots, os.environ)

    def hidden_problem(self, raw: str, real: str, *, holding: bool = True) -> str | None:
        """Why `raw` (resolving to `real`) lies in a hidden place, or (`holding`) is a folder
        that holds one, or None."""
        where = "" if real == raw else f" (it resolves to {real})"
        place = self.hidden.lies_in(real)
        if place is not None:
            return (
                f"`{raw}`{where} lies in {place}, which plan mode hides: it is one of the "
                "home's dot files or folders (only the toolchains are shown when a "
                "workspace holds the home) or a credentials or plan-lsp folder; "
                "reading it is not allowed"
            )
        if not holding:
            return None
        place = self.hidden.holds(real)
        if place is not None:
            return (
                f"`{raw}`{where} holds {place}, which plan mode hides (the home's dot "
                "files and folders but the toolchains, credentials, plan-lsp's own "
                "folders); reading this folder could read it: name the project's own "
                "folders or files instead"
            )
        return None

    def git_problem(self, base: str) -> str | None:
        """Why git, run in `base`, may not read the repository it finds there, or None: its
        `.git` (the nearest one above `base`, as git looks for it) lies in a hidden place,
        or is the home's own `.git` outside every root (the history of a dotfiles repository
        holds the home's dot files, which plan mode hides)."""
        rules = self.hidden
        home_git = _home_git(os.environ.get("HOME", ""))
        if rules.home is None and not rules.places and not os.path.lexists(home_git):
            return None  # nothing git could find is hidden (the usual case: one lstat)
        folder = base
        while True:
            candidate = os.path.join(folder, ".git")
            if os.path.lexists(candidate):
                break
            parent = os.path.dirname(folder)
            if parent == folder:
                return None
            folder = parent
        real = os.path.realpath(candidate)
        place = self.hidden.lies_in(real)
        if place is not None:
            return (
                f"git in {base} would read the repository at {real}, which lies in "
                f"{place}: plan mode hides it (a repository of the home's dot files "
                "holds them in its history)"
            )
        if real == home_git and not self.inside(real):
            return (
                f"git in {base} would read the home's own repository {real}, outside the "
                "workspace: its history holds the home's dot files, which plan mode hides"
            )
        return None

    def walk_problem(self, program: str, base: str | None = None) -> str | None:
        """Why `program`, walking the working directory because no folder was named, may not
        run here (the working directory holds a hidden place), or None."""
        where = base or self.cwd
        problem = self.hidden_problem(".", where)
        if problem is None:
            return None
        return f"`{program}` with no folder named walks the working directory {where}: {problem}"

    def moved(self, cwd: str) -> PathPolicy:
        """The same policy where relative paths start from `cwd` (real) instead."""
        other = copy.copy(self)
        other.cwd = cwd
        return other

    def inside(self, real: str) -> bool:
        return real in self.roots or real.startswith(self.prefixes)

    def cwd_problem(self) -> str | None:
        if not self.inside(self.cwd):
            return f"the working directory {self.cwd} is outside the workspace"
        place = self.hidden.lies_in(self.cwd)
        if place is not None:
            return f"the working directory {self.cwd} lies in {place}, which plan mode hides"
        return None

    def resolve(self, raw: str, base: str | None = None) -> str:
        """Where `raw` leads after symlinks. `base` (default: the working directory) is
        already real, so a relative path without `..` only needs its own components looked
        at; anything else goes through os.path.realpath."""
        start = base or self.cwd
        if raw.startswith("/") or ".." in raw:
            return os.path.realpath(raw if raw.startswith("/") else os.path.join(start, raw))
        cur = start
        parts = [p for p in raw.split("/") if p and p != "."]
        for index, part in enumerate(parts):
            nxt = cur + part if cur.endswith("/") else cur + "/" + part
            try:
                mode = os.lstat(nxt).st_mode
            except OSError:
                # Nothing exists below a missing component: the rest stays as written.
                return "/".join([nxt, *parts[index + 1 :]])
            if stat.S_ISLNK(mode):
                return os.path.realpath(os.path.join(start, raw))
            cur = nxt
        return cur

    def read_problem(
        self, raw: str, base: str | None = None, *, file_only: bool = False, moving: bool = False
    ) -> str | None:
        """Why reading `raw` is refused, or None. `moving`: `raw` is a directory to move into
        (`cd`, `git -C`), which may hold a hidden place but not lie in one."""
        if raw == "-":
            return None
        if raw == "":
            return "an empty file name"
        if OBJECT_NAME_PLACEHOLDER in raw:
            return (
                f"`{raw}`: the output of a command substitution would be read as a file name "
                "(a link in the workspace may carry that name)"
            )
        if raw.startswith("/") and os.path.normpath(raw) in self.harmless:
            return None
        real = self.resolve(raw, base)
        if not self.inside(real):
            where = "" if real == raw else f" (it resolves to {real})"
            return f"`{raw}` is outside the workspace{where}; reading it is not allowed"
        hidden = self.hidden_problem(raw, real, holding=not moving)
        if hidden is not None:
            return hidden
        if file_only and os.path.isdir(real):
            return f"`{raw}` is a directory; comparing directories follows symlinks inside them"
        return None

    def glob_problem(self, pattern: str, text: str, base: str | None = None) -> str | None:
        """Expand an unquoted glob the way bash would (plus dot files, to be safe) and check
        every match: inside the roots, and none starting with `-`. With no match bash passes
        the word on unchanged, so that name is checked too."""
        literal = self.read_problem(fnmatch_unescape(pattern), base)
        if literal is not None:
            return literal
        matches = self.expand(pattern, base)
        if matches is None:
            return f"`{text}` matches too many files to check"
        for shown, full in matches:
            if shown.startswith("-"):
                return f"`{text}` matches `{shown}`, which the program would read as an option"
            problem = self.read_problem(full)
            if problem is not None:
                return f"`{text}` matches `{shown}`: {problem}"
        return None

    def glob_matches(self, pattern: str, base: str | None = None) -> bool:
        """Whether bash could replace the glob with file names (else it stays as written)."""
        return self.expand(pattern, base) != []

    def expand(self, pattern: str, base: str | None = None) -> list[tuple[str, str]] | None:
        """Existing paths the glob matches, as (shown as bash prints it, full path); None
        when there are too many to check."""
        absolute = pattern.startswith("/")
        parts = [p for p in pattern.split("/") if p]
        candidates = [("/", "/")] if absolute else [("", base or self.cwd)]
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            nxt: list[tuple[str, str]] = []
            if not any(c in part for c in "*?"):
                name = fnmatch_unescape(part)
                for shown, where in candidates:
                    full = os.path.join(where, name)
                    if os.path.lexists(full):
                        nxt.append((os.path.join(shown, name), full))
            else:
                for shown, where in candidates:
                    try:
                        entries = os.listdir(where)
                    except OSError:
                        continue
                    if part.startswith("."):
                        # bash before 5.2 lets `.*` (and `.?`) match `.` and `..` too.
                        entries = [".", "..", *entries]
                    for entry in entries:
                        if fnmatch.fnmatchcase(entry, part):
                            full = os.path.join(where, entry)
                            if last or os.path.isdir(full):
                                nxt.append((os.path.join(shown, entry), full))
                    if len(nxt) > MAX_GLOB_MATCHES:
                        return None
            candidates = nxt
        return candidates


@lru_cache(maxsize=8)
def _home_git(home: str) -> str:
    """The home's own `.git` (real home), or a name that never exists without a home."""
    if not os.path.isabs(home):
        return "/nonexistent/.git"
    return os.path.join(os.path.realpath(home), ".git")


def fnmatch_unescape(part: str) -> str:
    """Undo the `[c]` escapes the lexer puts around quoted glob characters."""
    return _GLOB_ESCAPE.sub(r"\1", part)
