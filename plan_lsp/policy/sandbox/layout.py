"""What a sandboxed command may see: its environment, the hidden places, its limits.

Shared by every mechanism so they hide the same things. The lists are data (`layout.toml`):
a place is hidden because it is listed, never because a rule guessed; HOME_VISIBLE alone
allows (the home's dot entries shown when a workspace root is or holds the home).
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import stat
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, ValidationError, field_validator

Names = tuple[StrictStr, ...]


class Tables(BaseModel):
    """`layout.toml`: every key present, no other, each of its type."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kept_variables: Names
    kept_prefixes: Names
    home_roots: Names
    system_secrets: Names
    credential_variables: Names
    kernel_trees: Names
    system_dirs: Names
    home_secrets: Names
    home_toolchains: Names
    workspace_dir: StrictStr
    fixed_variables: dict[StrictStr, StrictStr]
    user_dir_variables: dict[StrictStr, StrictStr]
    cpu_seconds: StrictInt
    file_size_kib: StrictInt
    max_processes: StrictInt
    data_kib: StrictInt
    tmpfs_bytes: StrictInt
    small_tmpfs_bytes: StrictInt
    nobody: StrictInt

    @field_validator("home_roots", "system_secrets", "kernel_trees", "system_dirs")
    @classmethod
    def _absolute(cls, paths: tuple[str, ...]) -> tuple[str, ...]:
        if bad := [p for p in paths if not os.path.isabs(p) or p != os.path.normpath(p)]:
            raise ValueError(f"absolute, normalised paths are expected, not {bad}")
        return paths

    @field_validator("home_secrets", "home_toolchains", "workspace_dir")
    @classmethod
    def _relative(cls, paths: tuple[str, ...] | str) -> tuple[str, ...] | str:
        for path in (paths,) if isinstance(paths, str) else paths:
            if path.startswith("/") or any(p in ("", ".", "..") for p in path.split("/")):
                raise ValueError(f"{path!r}: a relative path of plain names is expected")
        return paths


_Model = TypeVar("_Model", bound=BaseModel)


def load_toml(model: type[_Model], name: str, text: str | None = None) -> _Model:
    """The data file `name` beside this module (or `text`) checked as `model`; ValueError."""
    if text is None:
        text = resources.files(__package__).joinpath(name).read_text("utf-8")
    try:
        return model.model_validate(tomllib.loads(text))
    except ValidationError as error:
        why = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise ValueError(f"{name}: {why}") from None


_TABLES = load_toml(Tables, "layout.toml")
KEPT_VARIABLES = _TABLES.kept_variables
FIXED_VARIABLES = _TABLES.fixed_variables
CREDENTIAL_VARIABLES = _TABLES.credential_variables
HOME_SECRETS = _TABLES.home_secrets
HOME_TOOLCHAINS = _TABLES.home_toolchains
HOME_VISIBLE = tuple(t for t in HOME_TOOLCHAINS if t.startswith("."))
CPU_SECONDS = _TABLES.cpu_seconds
FILE_SIZE_KIB = _TABLES.file_size_kib
MAX_PROCESSES = _TABLES.max_processes
DATA_KIB = _TABLES.data_kib
TMPFS_BYTES = _TABLES.tmpfs_bytes
SMALL_TMPFS_BYTES = _TABLES.small_tmpfs_bytes
NOBODY = _TABLES.nobody


@lru_cache(maxsize=1)
def _runtime_dir() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="plan-lsp-"))
    atexit.register(shutil.rmtree, directory, True)
    return directory


def runtime_path(name: str) -> Path:
    """Where `name` lives in this process's private directory (mode 0700)."""
    return _runtime_dir() / name


def runtime_file(name: str, content: bytes, mode: int) -> Path:
    """`name` in the private directory holding `content`, rewritten when missing or changed."""
    path = runtime_path(name)
    try:
        intact = path.read_bytes() == content and (path.stat().st_mode & 0o777) == mode
    except OSError:
        intact = False
    if not intact:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}-{os.getpid()}")
        tmp.write_bytes(content)
        tmp.chmod(mode)
        tmp.replace(path)
    return path


def home_dir(env: Mapping[str, str] | None = None) -> Path | None:
    env = os.environ if env is None else env
    home = env.get("HOME")
    if not home or not os.path.isabs(home):
        return None
    return Path(os.path.realpath(home))


def safe_path_variable(value: str) -> str:
    """PATH without empty or relative entries (they would find programs in the workspace)."""
    return ":".join(p for p in value.split(":") if p and os.path.isabs(p))


def plan_environment(
    base: Mapping[str, str] | None = None,
    *,
    home: str = "/tmp",
    extra_path: Sequence[str] = (),
) -> dict[str, str]:
    """The whole environment of a plan-mode command: the allow-list, nothing else."""
    base = os.environ if base is None else base
    env = {
        key: value
        for key, value in base.items()
        if key in KEPT_VARIABLES or key.startswith(_TABLES.kept_prefixes)
    }
    path = safe_path_variable(env.get("PATH", "") or os.defpath)
    env["PATH"] = ":".join([*extra_path, path]) if extra_path else path
    env.update(FIXED_VARIABLES)
    env["HOME"] = home
    return env


def _existing(paths: Iterable[str]) -> list[Path]:
    found: list[Path] = []
    for pattern in paths:
        matches = glob.glob(pattern) if any(c in pattern for c in "*?[") else [pattern]
        for match in sorted(matches):
            hidden = hideable(match)
            if hidden is not None:
                found.append(hidden)
    return found


def below(path: Path, parent: Path) -> bool:
    """`path` lies strictly inside `parent` (both absolute, normalised)."""
    p, q = str(path), str(parent)
    return p != q and p.startswith(q if q.endswith("/") else q + "/")


def _under(path: Path, parents: Iterable[Path]) -> bool:
    return any(path == p or below(path, p) for p in parents)


def hideable(value: str | os.PathLike[str]) -> Path | None:
    """`value` as the real path to hide: an existing regular file or directory, not `/`, in
    /dev, /proc or /sys, or a system directory or its parent; else None. So a variable
    cannot break the sandbox (and make the server fall back to a weaker one)."""
    text = os.fspath(value)
    if not text or not os.path.isabs(text):
        return None
    real = os.path.realpath(text)
    if not _hideable_place(real):
        return None
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return None
    return Path(real) if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else None


def _hideable_place(real: str) -> bool:
    """`real` is not `/`, in a kernel tree, or a system directory or its parent (string tests:
    this runs for every listed place on every command)."""
    if real == "/" or any(real == t or real.startswith(t + "/") for t in _TABLES.kernel_trees):
        return False
    prefix = real + "/"
    return not any(d == real or d.startswith(prefix) for d in _TABLES.system_dirs)


@dataclass(frozen=True)
class HiddenRules:
    """What plan mode hides inside the workspace roots, tested without the disk (`classified`
    checks every operand): the home's dot entries but HOME_VISIBLE when a root holds the
    home, and the secrets and plan-lsp folders inside a root."""

    home: str | None  # the real home, when a root is or holds it
    visible: tuple[str, ...]  # HOME_VISIBLE, and `.plan-lsp` when the home is a root
    places: tuple[str, ...]  # real paths inside a root

    def lies_in(self, real: str) -> str | None:
        """The hidden place `real` (a real, absolute path) is or lies in, or None."""
        for place in self.places:
            if real == place or real.startswith(place + "/"):
                return place
        if self.home is None or not real.startswith(self.home + "/"):
            return None
        parts = real[len(self.home) + 1 :].split("/")
        if not parts[0].startswith("."):
            return None
        for end in range(1, len(parts) + 1):
            rel = "/".join(parts[:end])
            if rel in self.visible:
                return None
            if not any(v.startswith(rel + "/") for v in self.visible):
                return f"{self.home}/{rel}"
        return None  # an ancestor of an allowed entry (`~/.cargo`): it only holds some

    def holds(self, real: str) -> str | None:
        """A hidden place strictly below the folder `real`, or None."""
        prefix = real if real.endswith("/") else real + "/"
        for place in self.places:
            if place.startswith(prefix):
                return place
        if self.home is None:
            return None
        if self.home.startswith(prefix) or real == self.home:
            return f"{self.home}/.*"
        if real.startswith(self.home + "/"):
            rel = real[len(self.home) + 1 :]
            if rel.startswith(".") and any(v.startswith(rel + "/") for v in self.visible):
                return f"{real}/*"
        return None


_RULE_VARIABLES = ("HOME", *CREDENTIAL_VARIABLES, *_TABLES.user_dir_variables)
_RULE_KEYS = tuple(os.fsencode(name) for name in _RULE_VARIABLES)


def hidden_rules(
    roots: Sequence[str | os.PathLike[str]], env: Mapping[str, str] | None = None
) -> HiddenRules:
    """The rules for `roots` (real paths) under `env`; cached by what they depend on."""
    raw = getattr(os.environ, "_data", None)
    if (env is None or env is os.environ) and isinstance(raw, dict):
        # Read without os.environ's per-key encoding: this runs on every classification.
        found = (raw.get(key) for key in _RULE_KEYS)
        values = tuple(None if v is None else os.fsdecode(v) for v in found)
    else:
        values = tuple(map((os.environ if env is None else env).get, _RULE_VARIABLES))
    return _hidden_rules(tuple(os.fspath(r) for r in roots), values, _RULE_VARIABLES)


@lru_cache(maxsize=64)
def _hidden_rules(
    roots_key: tuple[str, ...], values: tuple[str | None, ...], names: tuple[str, ...]
) -> HiddenRules:
    env = {n: v for n, v in zip(names, values, strict=True) if v is not None}
    roots = [os.path.realpath(r) for r in roots_key]

    def inside(real: str) -> bool:
        return any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)

    named = [v for n in CREDENTIAL_VARIABLES for v in env.get(n, "").split(os.pathsep)]
    named += user_plan_lsp_dirs(env)
    home = home_dir(env)
    if home is not None:
        named += [str(home / rel) for rel in HOME_SECRETS]
    places = []
    for value in named:
        if value and os.path.isabs(value):
            real = os.path.realpath(value)
            if _hideable_place(real) and inside(real):
                places.append(real)
    real_home = str(home) if home is not None else None
    if real_home is None or not inside(real_home) or not _hideable_place(real_home):
        return HiddenRules(None, (), tuple(dict.fromkeys(places)))
    visible = (*HOME_VISIBLE, *((_TABLES.workspace_dir,) if real_home in roots else ()))
    return HiddenRules(real_home, visible, tuple(dict.fromkeys(places)))


@dataclass(frozen=True)
class Layout:
    """The filesystem view of a plan-mode sandbox, as absolute real paths."""

    hidden_dirs: tuple[Path, ...]  # an empty tmpfs (bubblewrap) or unreadable (landlock)
    hidden_files: tuple[Path, ...]  # /dev/null or unreadable
    toolchains: tuple[Path, ...]  # read-only again below a hidden directory
    roots: tuple[Path, ...]  # read-only wherever they live
    credentials: tuple[Path, ...]  # named by the environment; hidden last, even in a root


def plan_layout(roots: Sequence[Path], env: Mapping[str, str] | None = None) -> Layout:
    """Computed once per distinct (roots, relevant environment): it runs on every command."""
    env = os.environ if env is None else env
    names = ("HOME", "PATH", *CREDENTIAL_VARIABLES)
    key = (tuple(str(r) for r in roots), tuple(env.get(n) for n in names))
    layout = _plan_layout(key[0], key[1], names)
    # Not cached (a file may appear at any time): credentials and the user's plan-lsp folders
    # (every workspace's sessions), wherever they are.
    named = [
        value for name in CREDENTIAL_VARIABLES for value in env.get(name, "").split(os.pathsep)
    ]
    home = home_dir(env)
    named += user_plan_lsp_dirs(env)
    credentials = [p for p in map(hideable, named) if p is not None]
    # A root that is or holds the home shows it again: its dot entries but HOME_VISIBLE go.
    if home is not None and _under(Path(os.path.realpath(home)), layout.roots):
        credentials += home_dot_places(home, layout.roots)
    # The home's usual secrets where something shows them again: a root inside the home, or
    # a link in the home to a place outside it.
    if home is not None:
        real_home = Path(os.path.realpath(home))
        found = (hideable(home / rel) for rel in HOME_SECRETS)
        credentials += [
            c for c in found
            if c is not None and (_under(c, layout.roots) or not _under(c, [real_home]))
        ]  # fmt: skip
    # A credentials directory holding a root is hidden like a home, before the roots.
    holders = [c for c in credentials if c.is_dir() and any(_under(r, [c]) for r in layout.roots)]
    return replace(
        layout,
        hidden_dirs=tuple(dict.fromkeys([*layout.hidden_dirs, *holders])),
        credentials=tuple(dict.fromkeys(c for c in credentials if c not in holders)),
    )


def home_dot_places(home: Path, roots: Sequence[Path]) -> list[Path]:
    """The real paths hiding the home's dot entries but HOME_VISIBLE (below one holding an
    allowed subpath, `.cargo/bin`, each entry down to it). A link is hidden at its target
    unless that lies inside a root."""
    real_home = Path(os.path.realpath(home))
    visible = (*HOME_VISIBLE, *((_TABLES.workspace_dir,) if real_home in roots else ()))
    found: list[Path] = []

    def visit(folder: Path, prefix: str) -> None:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return
        for name in names:
            if not prefix and not name.startswith("."):
                continue
            rel = prefix + name
            if rel in visible:
                continue
            path = folder / name
            if any(v.startswith(rel + "/") for v in visible) and os.path.isdir(path):
                visit(path, rel + "/")
                continue
            if os.path.islink(path) and _under(Path(os.path.realpath(path)), roots):
                continue
            hidden = hideable(path)
            if hidden is not None:
                found.append(hidden)

    visit(real_home, "")
    return found


def user_plan_lsp_dirs(env: Mapping[str, str]) -> list[str]:
    """The user's plan-lsp folders as the server finds them (`$XDG_*_HOME/plan-lsp`, else the
    home's default, and `$PLAN_LSP_STATE_DIR`); they may not exist."""
    home = home_dir(env)
    found: list[str] = []
    for variable, default in _TABLES.user_dir_variables.items():
        base = env.get(variable, "")
        if os.path.isabs(base):
            found.append(os.path.join(base, "plan-lsp"))
        elif home is not None:
            found.append(str(home / default / "plan-lsp"))
    if os.path.isabs(env.get("PLAN_LSP_STATE_DIR", "")):
        found.append(env["PLAN_LSP_STATE_DIR"])
    return found


def own_places(roots: Sequence[Path], env: Mapping[str, str]) -> list[Path]:
    """What a build-mode command may not change besides every `<root>/.plan-lsp`: the user's
    plan-lsp folders, the private folder (the git shim), the server's package unless a root
    holds it."""
    real_roots = [Path(os.path.realpath(r)) for r in roots]
    places = [p for p in map(hideable, user_plan_lsp_dirs(env)) if p is not None]
    places.append(Path(os.path.realpath(_runtime_dir())))
    code = Path(__file__).resolve().parents[2]
    inside_root = _under(code, real_roots) or any(_under(r, [code]) for r in real_roots)
    if not inside_root and hideable(code) is not None:
        places.append(code)
    return [p for p in dict.fromkeys(places) if p.is_dir()]


@lru_cache(maxsize=32)
def _plan_layout(
    roots_key: tuple[str, ...], values: tuple[str | None, ...], names: tuple[str, ...]
) -> Layout:
    env = {n: v for n, v in zip(names, values, strict=True) if v is not None}
    roots = [Path(r) for r in roots_key]
    real_roots = tuple(dict.fromkeys(Path(os.path.realpath(r)) for r in roots))
    hidden: list[Path] = [Path(p) for p in _TABLES.home_roots if os.path.isdir(p)]
    home = home_dir(env)
    if home is not None and hideable(home) is not None and not _under(home, hidden):
        hidden.append(home)
    hidden_dirs = [p for p in hidden if os.path.isdir(p)]
    hidden_files: list[Path] = []
    for path in _existing(_TABLES.system_secrets):
        (hidden_dirs if path.is_dir() else hidden_files).append(path)
    return Layout(
        hidden_dirs=tuple(dict.fromkeys(hidden_dirs)),
        hidden_files=tuple(dict.fromkeys(hidden_files)),
        toolchains=tuple(_toolchains(hidden_dirs, home, env)),
        roots=real_roots,
        credentials=(),
    )


def _toolchains(hidden: Sequence[Path], home: Path | None, env: Mapping[str, str]) -> list[Path]:
    """Program locations under a hidden directory that commands still need."""
    wanted: list[Path] = []
    if home is not None:
        wanted.extend(home / sub for sub in HOME_TOOLCHAINS)
    for entry in safe_path_variable(env.get("PATH", "")).split(":"):
        if entry:
            wanted.append(Path(entry))
            # A version manager's shims run its program from the folder holding them.
            if Path(entry).name == "shims":
                wanted.append(Path(entry).parent)
    # The server's own interpreter: virtual environments in the workspace link to it.
    wanted.extend(Path(p) for p in {sys.base_prefix, sys.prefix})
    found: list[Path] = []
    for path in wanted:
        if not os.path.exists(path):
            continue
        real = Path(os.path.realpath(path))
        # Strictly below a hidden directory, never re-exposing one (PATH holding $HOME).
        inside = any(below(real, h) for h in hidden)
        covers = any(h == real or below(h, real) for h in hidden)
        if inside and not covers:
            found.append(real)
    kept: list[Path] = []
    for path in sorted(set(found), key=lambda p: len(p.parts)):
        if not any(below(path, k) for k in kept):
            kept.append(path)
    return kept
