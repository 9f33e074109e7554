"""Files that run code later (`autorun.toml`): git's configuration and hooks, editor project
files that run programs, `.envrc`, `.devcontainer/`, `.plan-lsp/`.

Programs run these by themselves, outside any sandbox, when the user commits, checks out,
opens the folder or enters it. So an edit tool's write to one asks the user in every
permission mode (`permissions.py`), and a build-mode shell command sees them read-only in the
build sandbox unless its words name them and the user allowed it (`sandbox/bwrap.py`).

A path is matched in every spelling it may have: as written (relative to the folder the tool
works in) and after resolving links, against each workspace root, segment by segment and
case-insensitively (a case-insensitive file system opens `.GIT/HOOKS/Pre-Commit` as the
hook); git's entries also wherever the repository really is: a `.git` folder at or above
the root, the folder a `.git` file names (`gitdir:`, worktrees and submodules), a worktree's
common folder, and `core.hooksPath`.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

GIT = ".git"


class Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    where: Literal["root", "git"] = Field(alias="in")
    path: str
    warning: str = Field(min_length=10, max_length=200)

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        parts = value.rstrip("/").split("/")
        if value.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"{value!r}: a relative path of plain names is expected")
        if any(c in p for p in parts if p != "*" for c in "*?["):
            raise ValueError(f"{value!r}: `*` may only stand for one whole segment")
        return value.lower()

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.path.rstrip("/").split("/"))

    @property
    def folder(self) -> bool:
        return self.path.endswith("/")


class GitWords(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    config_writers: frozenset[str]


class Autorun(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    file: tuple[Entry, ...] = Field(min_length=1)
    git: GitWords


@cache
def autorun() -> Autorun:
    """The list, loaded and validated once."""
    text = resources.files("plan_lsp.policy").joinpath("autorun.toml").read_text("utf-8")
    return Autorun.model_validate(tomllib.loads(text))


@dataclass(frozen=True)
class Hit:
    """A protected file a path names: how it is shown, where it is, what runs it."""

    shown: str
    real: Path | None  # None: no one file (a command too long to read)
    warning: str


def describe(hits: Sequence[Hit]) -> str:
    """The warning a permission prompt shows."""
    named = "; ".join(f"{h.shown}: {h.warning}" for h in hits)
    return f"this changes a file that runs code later, outside any sandbox ({named})"


# -- where git keeps what it runs ----------------------------------------------------------


def _gitdir_file(path: Path) -> Path | None:
    try:
        first = path.read_text("utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return None
    if not first.startswith("gitdir:"):
        return None
    return Path(os.path.realpath(path.parent / first[len("gitdir:") :].strip()))


def _hooks_path(config: Path, top: Path) -> Path | None:
    """`core.hooksPath` of a configuration file (the plain `[core]` form), or None."""
    try:
        text = config.read_text("utf-8", errors="replace")
    except OSError:
        return None
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped.strip("[] \t").lower()
        elif section == "core" and re.match(r"(?i)hookspath\s*=", stripped):
            value = stripped.split("=", 1)[1].strip().strip('"')
            if value:
                return Path(os.path.realpath(top / os.path.expanduser(value)))
    return None


def git_places(root: Path) -> tuple[list[Path], list[Path]]:
    """(git folders, hook folders named by `core.hooksPath`) of the repository `root` is in:
    the `.git` at or above it, or the folder a `.git` file names, and its common folder."""
    real = Path(os.path.realpath(root))
    for top in (real, *real.parents):
        marker = top / GIT
        if marker.is_dir():
            dirs = [Path(os.path.realpath(marker))]
        elif marker.is_file():
            target = _gitdir_file(marker)
            dirs = [target] if target is not None else []
        else:
            continue
        for found in list(dirs):
            try:
                common = (found / "commondir").read_text("utf-8").strip()
            except OSError:
                continue
            dirs.append(Path(os.path.realpath(found / common)))
        hooks = [h for d in dirs if (h := _hooks_path(d / "config", top)) is not None]
        return list(dict.fromkeys(dirs)), hooks
    return [], []


# -- matching ------------------------------------------------------------------------------


def _seg(word: str, pattern: str, glob: bool) -> bool:
    if pattern == "*":
        return True
    return fnmatch.fnmatchcase(pattern, word) if glob else word == pattern


def _entry_hit(rel: Sequence[str], entry: Entry, *, ancestors: bool, glob: bool) -> bool:
    pat = entry.parts
    if len(rel) < len(pat):
        return ancestors and bool(rel) and all(map(_seg, rel, pat, [glob] * len(rel)))
    if len(rel) > len(pat) and not entry.folder:
        return False
    return all(_seg(w, p, glob) for w, p in zip(rel, pat, strict=False))


def _rel(form: str, base: str) -> list[str] | None:
    """The lower-cased segments of `form` below `base` (both absolute, normalised)."""
    low, base_low = form.lower(), base.lower().rstrip("/")
    if low == base_low:
        return []
    if low.startswith(base_low + "/"):
        return low[len(base_low) + 1 :].split("/")
    return None


def _shown(form: str, roots: Sequence[str]) -> str:
    for root in roots:
        rel = os.path.relpath(form, root)
        if not rel.startswith(".."):
            return rel
    return form


def _forms(path: str, base: Path) -> list[str]:
    joined = os.path.join(base, path)
    forms = [os.path.normpath(joined), os.path.realpath(joined)]
    return list(dict.fromkeys(f for f in forms if f))


def _root_forms(roots: Iterable[Path]) -> list[str]:
    found = []
    for root in roots:
        found += [os.path.normpath(os.path.abspath(root)), os.path.realpath(root)]
    return list(dict.fromkeys(found))


def _entry(where: str, path: str) -> Entry:
    return next(e for e in autorun().file if e.where == where and e.path == path)


@cache
def _by_first(where: str) -> dict[str, tuple[Entry, ...]]:
    """The entries of `where`, by their first segment (most words share none)."""
    index: dict[str, tuple[Entry, ...]] = {}
    for e in autorun().file:
        if e.where == where:
            index[e.parts[0]] = (*index.get(e.parts[0], ()), e)
    return index


def _candidates(where: str, first: str, glob: bool) -> Iterable[Entry]:
    index = _by_first(where)
    return [e for es in index.values() for e in es] if glob else index.get(first, ())


def _match_rel(rel: Sequence[str], *, ancestors: bool, glob: bool = False) -> list[Entry]:
    """Entries `rel` (segments below a root) names: root entries, and git entries below a
    `.git` spelled in any case."""
    if not rel:
        return []
    hits = [
        e
        for e in _candidates("root", rel[0], glob)
        if _entry_hit(rel, e, ancestors=ancestors, glob=glob)
    ]
    if len(rel) > 1 and _seg(rel[0], GIT, glob):
        hits += [
            e for e in _candidates("git", rel[1], glob)
            if _entry_hit(rel[1:], e, ancestors=ancestors, glob=glob)
        ]  # fmt: skip
    return hits


GitPlaces = list[tuple[list[Path], list[Path]]]


def protected(
    path: str,
    roots: Sequence[Path],
    base: Path | None = None,
    *,
    ancestors: bool = False,
    places: GitPlaces | None = None,
) -> list[Hit]:
    """The protected files `path` names (relative paths from `base`, default the first
    root). `ancestors`: a folder holding one counts too (a shell word `.git` or `.vscode`)."""
    if not path or "\x00" in path or not roots:
        return []
    table = autorun()
    root_forms = _root_forms(roots)
    forms = _forms(path, base or roots[0])
    hits: dict[str, Hit] = {}

    def add(form: str, entries: Iterable[Entry]) -> None:
        for entry in entries:
            shown = _shown(form, root_forms)
            hits.setdefault(shown, Hit(shown, Path(os.path.realpath(form)), entry.warning))

    if places is None:
        places = [git_places(root) for root in roots]
    for form in forms:
        for root_form in root_forms:
            rel = _rel(form, root_form)
            if rel is not None:
                add(form, _match_rel(rel, ancestors=ancestors))
        for dirs, hook_dirs in places:
            for gitdir in dirs:
                rel = _rel(form, str(gitdir))
                if rel is None:
                    continue
                git_entries = [e for e in table.file if e.where == "git"]
                found = [
                    e for e in git_entries if _entry_hit(rel, e, ancestors=ancestors, glob=False)
                ]
                if ancestors and not rel:  # the git folder itself
                    found = [_entry("git", "config")]
                add(form, found)
            for hooks in hook_dirs:
                if _rel(form, str(hooks)) is not None:
                    add(form, [_entry("git", "hooks/")])
    return list(hits.values())


# -- shell words ---------------------------------------------------------------------------

# A longer command is not read word by word: it asks (the build sandbox still binds every
# protected file read-only for it).
MAX_COMMAND_CHARS = 32768
_OPERATORS = {";", "&&", "||", "|", "&", "(", ")", "\n", ";;", "|&"}
_GLOB = re.compile(r"[*?\[]")


def _words(command: str) -> list[str]:
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = ""
        return list(lexer)
    except ValueError:
        return re.split(r"[\s;&|()<>'\"]+", command)


def _word_hits(word: str, roots: Sequence[Path], cwd: Path, places: GitPlaces) -> list[Hit]:
    hits = protected(word, roots, cwd, ancestors=True, places=places)
    if hits:
        return hits
    # Where the command may have changed folder first (`cd sub && echo > ../.envrc`), or a
    # glob the shell expands: the word's last segments against every entry, any case.
    parts = [p.lower() for p in word.split("/") if p not in ("", ".", "..")]
    glob = bool(_GLOB.search(word))
    for start in range(len(parts)):
        for entry in _match_rel(parts[start:], ancestors=True, glob=glob):
            real = Path(os.path.realpath(cwd / word))
            hits.append(Hit("/".join(parts[start:]), real, entry.warning))
    return hits


def command_hits(command: str, roots: Sequence[Path], cwd: Path | None = None) -> list[Hit]:
    """The protected files a shell command's words name: paths in any operand or redirect,
    and a git directory's `config` for a git subcommand that writes it (`git config`,
    `git remote`, `git -c`, ...)."""
    if not roots:
        return []
    if len(command) > MAX_COMMAND_CHARS:
        return [
            Hit(
                "this command",
                None,
                f"it is longer than the {MAX_COMMAND_CHARS:,} "
                "characters read for the files that run code later it may change",
            )
        ]
    cwd = cwd or roots[0]
    writers = autorun().git.config_writers
    places = [git_places(root) for root in roots]
    found: list[Hit] = []
    seen: set[str] = set()
    git_seen = False
    for word in _words(command):
        if word in _OPERATORS:
            git_seen = False
            continue
        if os.path.basename(word) == "git":
            git_seen = True
        elif git_seen and word.split("=", 1)[0] in writers:
            found += _git_config(roots)
        for piece in {word, *word.split("=")[1:]} - seen:
            seen.add(piece)
            if piece and "\x00" not in piece:
                found += _word_hits(piece, roots, cwd, places)
    return list({h.shown: h for h in found}.values())


def _git_config(roots: Sequence[Path]) -> list[Hit]:
    entry = _entry("git", "config")
    root_forms = _root_forms(roots)
    hits = []
    for root in roots:
        for gitdir in git_places(root)[0]:
            config = gitdir / "config"
            hits.append(Hit(_shown(str(config), root_forms), config, entry.warning))
    return hits


# -- the build sandbox ---------------------------------------------------------------------


@dataclass(frozen=True)
class Place:
    """What the build sandbox does with one place: `ro` binds it read-only; `missing` binds a
    read-only empty folder made for the command in its place, so nothing can be created
    there (an empty folder: `git status` and `git add -A` do not see it, and no write
    opens it); `pin` binds an existing folder onto itself, writable, so that it cannot be
    renamed away with the protected files inside it (a mount point cannot be)."""

    path: Path
    how: Literal["ro", "missing", "pin"]


def _concrete(base: Path, parts: Sequence[str]) -> list[Path]:
    """`base/parts` with `*` segments expanded over the folders that exist."""
    found = [base]
    for part in parts:
        nxt = []
        for folder in found:
            if part == "*":
                try:
                    nxt += sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
                except OSError:
                    pass
            else:
                nxt.append(folder / part)
        found = nxt
    return found


def sandbox_places(roots: Sequence[Path], skip: Sequence[str] = (".plan-lsp/",)) -> list[Place]:
    """Where the build sandbox binds each protected file of `roots`, parents first; a file or
    folder that does not exist yet gets a placeholder (at its topmost missing folder)."""
    places: dict[Path, Place] = {}

    def put(path: Path, how: Literal["ro", "missing", "pin"]) -> None:
        places.setdefault(path, Place(path, how))

    def visit(base: Path, entry: Entry) -> None:
        for target in _concrete(base, entry.parts):
            if os.path.exists(target) and not is_placeholder(target):
                put(target, "ro")
                continue
            if os.path.lexists(target) and not is_placeholder(target):
                continue  # a dangling link: nothing to bind (docs/security.md)
            missing = target
            while not os.path.lexists(missing.parent) and missing.parent != base:
                missing = missing.parent
            if missing.parent.is_symlink() and missing.parent.is_dir():
                put(missing.parent, "ro")  # its target, read-only
            elif missing.parent.is_dir():
                put(missing, "missing")
        for parent in _concrete(base, entry.parts[:-1]):
            if parent != base and parent.is_dir() and not parent.is_symlink():
                put(parent, "pin")

    for root in roots:
        real = Path(os.path.realpath(root))
        dirs, hook_dirs = git_places(real)
        for entry in autorun().file:
            if entry.path in skip:
                continue
            if entry.path == GIT:
                # Only bound where it is: a placeholder `.git` would stop every git command.
                marker = real / GIT
                if marker.is_dir() and not marker.is_symlink():
                    put(marker, "pin")
                elif os.path.exists(marker):
                    put(marker, "ro")
            elif entry.where == "root":
                visit(real, entry)
            else:
                for gitdir in dirs:
                    if gitdir.is_dir():
                        put(gitdir, "pin")
                        visit(gitdir, entry)
        for hooks in hook_dirs:
            if hooks.is_dir():
                put(hooks, "ro")
    return sorted(places.values(), key=lambda p: len(p.path.parts))


# An empty folder whose modification time is the epoch: a placeholder, made by
# `make_placeholder` and removed when the command ends (or by the next command, when that
# cleanup was killed). No tool or person makes such a folder.
def is_placeholder(path: Path) -> bool:
    try:
        st = os.lstat(path)
        return st.st_mtime == 0 and path.is_dir() and not any(path.iterdir())
    except OSError:
        return False


def make_placeholder(path: Path) -> bool:
    """Make the placeholder folder `path` (or keep a leftover one); False when something
    else is there now."""
    if is_placeholder(path):
        return True
    try:
        os.mkdir(path, 0o755)
        os.utime(path, (0, 0), follow_symlinks=False)
    except OSError:
        return False
    return True
