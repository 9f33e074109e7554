"""Files that run code later (`autorun.toml`): git's configuration and hooks, editor project
files that run programs, `.envrc`, `.devcontainer/`, `.plan-lsp/`.

They run outside any sandbox when the user commits, opens or enters the folder, so an edit
to one asks in every permission mode. A path is matched as written and resolved against each
root, case-insensitively (`.GIT/HOOKS/Pre-Commit` on such a file system is the hook); git's
entries also wherever the repository really is (`gitdir:`, worktrees, `core.hooksPath`).
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
    placeholder: bool = True  # a missing one is held by a placeholder in the build sandbox
    sandbox: bool = True  # bound read-only in the build sandbox (else: asked about only)

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


class Autorun(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    git_config_writers: frozenset[str]
    file: tuple[Entry, ...] = Field(min_length=1)


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


def git_places(root: Path) -> tuple[list[Path], list[Path]]:
    """(git folders, `core.hooksPath` folders) of the repository `root` is in."""
    real = Path(os.path.realpath(root))
    for top in (real, *real.parents):
        marker = top / GIT
        if marker.is_dir():
            dirs = [Path(os.path.realpath(marker))]
        elif marker.is_file():
            text = _first_line(marker)
            if not text.startswith("gitdir:"):
                return [], []
            dirs = [Path(os.path.realpath(top / text[len("gitdir:") :].strip()))]
        else:
            continue
        if common := _first_line(dirs[0] / "commondir"):  # a worktree's shared folder
            dirs.append(Path(os.path.realpath(dirs[0] / common)))
        hooks = [h for d in dirs if (h := _hooks_path(d / "config", top)) is not None]
        return list(dict.fromkeys(dirs)), hooks
    return [], []


def _hooks_path(config: Path, top: Path) -> Path | None:
    """`core.hooksPath` of a configuration file (in its first `[core]` section), or None."""
    try:
        text = config.read_text("utf-8", errors="replace")
    except OSError:
        return None
    core = re.search(r"(?ims)^\s*\[core\]([^\[]*)", text)
    found = core and re.search(r"(?im)^\s*hookspath\s*=\s*\"?([^\"\n]+)", core.group(1))
    return Path(os.path.realpath(top / os.path.expanduser(found[1].strip()))) if found else None


def concrete(base: Path, parts: Sequence[str]) -> list[Path]:
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


# How deep includes are followed, and how many files a protected folder's links are read in.
MAX_INCLUDE_DEPTH = 4
MAX_FOLDER_LINKS = 200
_INCLUDE_PATH = re.compile(r"(?ims)^\s*\[\s*include(?:if\b[^\]]*)?\]([^\[]*)")
_PATH_KEY = re.compile(r"(?im)^\s*path\s*=\s*\"?([^\"\n]+)")


def led_to(roots: Sequence[Path]) -> dict[Path, Entry]:
    """Files and folders a protected one leads to, with its entry: the target of one that is
    a link (or of a link inside a protected folder), the files git's configuration includes
    and a `core.hooksPath` they set. Writing one changes what the protected file says."""
    found: dict[Path, Entry] = {}
    config = _entry("git", "config")
    for root in roots:
        real = Path(os.path.realpath(root))
        dirs, hook_dirs = git_places(real)
        for entry in autorun().file:
            for base in [real] if entry.where == "root" else dirs:
                for path in concrete(base, entry.parts):
                    for link in _links(path, entry.folder):
                        found.setdefault(Path(os.path.realpath(link)), entry)
        for hooks in hook_dirs:
            for link in _links(hooks, True):
                found.setdefault(Path(os.path.realpath(link)), _entry("git", "hooks/"))
        for gitdir in dirs:
            for included, their_hooks in _includes(gitdir / "config", real, 0):
                found.setdefault(included, config)
                if their_hooks is not None:
                    found.setdefault(their_hooks, _entry("git", "hooks/"))
    return found


def _links(path: Path, folder: bool) -> list[Path]:
    """`path` if it is a link; in a folder (not a link), the links it holds (one level)."""
    if path.is_symlink():
        return [path]
    if not folder or not path.is_dir():
        return []
    try:
        with os.scandir(path) as entries:
            return [
                Path(e.path)
                for _, e in zip(range(MAX_FOLDER_LINKS), entries, strict=False)
                if e.is_symlink()
            ]
    except OSError:
        return []


def _includes(config: Path, top: Path, depth: int) -> list[tuple[Path, Path | None]]:
    """(file, its `core.hooksPath`) for each file `config` includes, as git finds them."""
    if depth >= MAX_INCLUDE_DEPTH:
        return []
    try:
        text = config.read_text("utf-8", errors="replace")
    except OSError:
        return []
    found = []
    for section in _INCLUDE_PATH.finditer(text):
        for value in _PATH_KEY.findall(section.group(1)):
            included = Path(os.path.realpath(config.parent / os.path.expanduser(value.strip())))
            found.append((included, _hooks_path(included, top)))
            found += _includes(included, top, depth + 1)
    return found


def _first_line(path: Path) -> str:
    try:
        return path.read_text("utf-8", errors="replace").strip().split("\n", 1)[0]
    except OSError:
        return ""


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
    """Entries `rel` (segments below a root) names, git's below a `.git` in any case."""
    if not rel:
        return []
    hits = [
        e
        for e in _candidates("root", rel[0], glob)
        if _entry_hit(rel, e, ancestors=ancestors, glob=glob)
    ]
    for at in range(len(rel) - 1):  # below a `.git` at any depth: a repository in the tree
        if _seg(rel[at], GIT, glob):
            hits += [
                e for e in _candidates("git", rel[at + 1], glob)
                if _entry_hit(rel[at + 1 :], e, ancestors=ancestors, glob=glob)
            ]  # fmt: skip
    if len(rel) > 1 and _seg(rel[-1], GIT, glob):  # a nested repository's `.git` itself
        hits.append(_entry("root", GIT))
    return hits


GitPlaces = list[tuple[list[Path], list[Path]]]


def protected(
    path: str,
    roots: Sequence[Path],
    base: Path | None = None,
    *,
    ancestors: bool = False,
    places: GitPlaces | None = None,
    led: dict[Path, Entry] | None = None,
) -> list[Hit]:
    """The protected files `path` names (relative to `base`, default the first root);
    `ancestors`: a folder holding one counts too (a shell word `.git`)."""
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
    if led is None:
        led = led_to(roots)
    for form in forms:
        real = Path(os.path.realpath(form))
        for target, entry in led.items():
            if real == target or target in real.parents:
                shown = _shown(form, root_forms)
                hits.setdefault(
                    shown, Hit(shown, real, f"a protected file leads here: {entry.warning}")
                )
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


# A longer command, or one with more distinct words, is not read word by word: it asks.
MAX_COMMAND_CHARS = 65536
MAX_WORDS = 2000
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


def _word_hits(
    word: str, roots: Sequence[Path], cwd: Path, places: GitPlaces, led: dict[Path, Entry]
) -> list[Hit]:
    hits = protected(word, roots, cwd, ancestors=True, places=places, led=led)
    if hits:
        return hits
    # After a `cd` (`cd sub && echo > ../.envrc`) or a glob: its last segments, any case.
    parts = [p.lower() for p in word.split("/") if p not in ("", ".", "..")]
    glob = bool(_GLOB.search(word))
    firsts = {GIT, *_by_first("root")}
    for start in range(len(parts)):
        if not glob and parts[start] not in firsts:
            continue
        for entry in _match_rel(parts[start:], ancestors=True, glob=glob):
            real = Path(os.path.realpath(cwd / word))
            hits.append(Hit("/".join(parts[start:]), real, entry.warning))
    return hits


def command_hits(command: str, roots: Sequence[Path], cwd: Path | None = None) -> list[Hit]:
    """The protected files a shell command's words name, and a git directory's `config` for
    a git subcommand that writes it (`git config`, `git remote`, ...)."""
    if not roots:
        return []
    words = _words(command) if len(command) <= MAX_COMMAND_CHARS else []
    if (not words and command.strip()) or len(set(words)) > MAX_WORDS:
        why = f"longer than the {MAX_COMMAND_CHARS:,} characters or {MAX_WORDS:,} words read"
        return [Hit("this command", None, why + " for such files")]
    cwd = cwd or roots[0]
    writers = autorun().git_config_writers
    places = [git_places(root) for root in roots]
    led = led_to(roots)
    found: list[Hit] = []
    seen: set[str] = set()
    git_seen = False
    for word in words:
        if word in _OPERATORS:
            git_seen = False
            continue
        if os.path.basename(word) == "git":
            git_seen = True
        elif git_seen and word.split("=", 1)[0] in writers:
            found += _git_config(roots)
        for piece in {word, *word.split("=")[1:]} - seen:
            seen.add(piece)
            # A word longer than PATH_MAX names no file the system opens.
            if piece and "\x00" not in piece and len(piece) <= 4096:
                found += _word_hits(piece, roots, cwd, places, led)
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
