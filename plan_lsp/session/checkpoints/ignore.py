"""Which paths a checkpoint skips: the user's `.gitignore` files (each folder's, and
`.git/info/exclude`), read the way git reads them, plus a few trees that are never worth a
copy (`node_modules/`, `.venv/`, `__pycache__/`). Reading these files is all this does: the
user's repository is never asked anything, so its index and locks are never touched.

A rule list answers `ignored(rel, is_dir)` for a path relative to the workspace root in
`/` form; the last matching rule wins, `!` re-includes. Global excludes (`core.excludesFile`)
are not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_IGNORED = ("node_modules/", ".venv/", "__pycache__/")


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _translate(pattern: str) -> str:
    """A gitignore glob (already stripped of `!`, the trailing `/`) as a regex over the path
    relative to the rule's folder (the caller puts the folder in front)."""
    anchored = "/" in pattern
    pattern = pattern.lstrip("/")
    out: list[str] = [] if anchored else ["(?:.*/)?"]
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("/.*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif pattern[i] == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def parse(text: str, base: str) -> list[_Rule]:
    rules: list[_Rule] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        try:
            regex = re.compile(re.escape(base) + _translate(line) + r"\Z", re.DOTALL)
        except re.error:
            continue  # git ignores a pattern it cannot read; so do we
        rules.append(_Rule(regex, negate, dir_only))
    return rules


@dataclass
class IgnoreRules:
    """The rules in force; `add_folder` reads a folder's `.gitignore` as the walk enters it."""

    rules: list[_Rule] = field(default_factory=list)

    def __post_init__(self) -> None:
        # One regex for "does any rule match at all": most paths match none.
        union = "|".join(f"(?:{r.regex.pattern})" for r in self.rules)
        self._any = re.compile(union, re.DOTALL) if union else None

    @classmethod
    def for_root(cls, root: Path, defaults: tuple[str, ...] = DEFAULT_IGNORED) -> IgnoreRules:
        rules = parse("\n".join(defaults), "")
        for name in (".git/info/exclude", ".gitignore"):
            rules += parse(_read(root / name), "")
        return cls(rules)

    def add_folder(self, folder: Path, rel: str) -> IgnoreRules:
        """These rules plus the `.gitignore` of `folder` (`rel`: its path + "/")."""
        extra = parse(_read(folder / ".gitignore"), rel) if rel else []
        return IgnoreRules(self.rules + extra) if extra else self

    def ignored(self, rel: str, is_dir: bool) -> bool:
        if self._any is None or not self._any.match(rel):
            return False
        for rule in reversed(self.rules):
            if (is_dir or not rule.dir_only) and rule.regex.match(rel):
                return not rule.negate
        return False

    def ignored_path(self, root: Path, rel: str) -> bool:
        """Whether `rel` or one of its folders is ignored (for a path met outside a walk)."""
        parts = rel.split("/")
        rules = self
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            is_dir = depth < len(parts) or (root / rel).is_dir()
            if rules.ignored(prefix, is_dir):
                return True
            if depth < len(parts):
                rules = rules.add_folder(root / prefix, prefix + "/")
        return False


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
