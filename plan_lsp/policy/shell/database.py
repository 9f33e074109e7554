"""The shell classifier's program database: `programs.toml` loaded into typed programs, read
by both rule sets (`argcheck.py`, `argv.py`). Nothing here names a program.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Collection
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from plan_lsp.policy.shell.model import CAPABILITIES

Arity = Literal["none", "required", "pair", "optional", "attached"]
# What an option's value is: free text, a file the program reads (checked against the
# workspace roots), or a directory the program changes into (`git -C`).
ValueKind = Literal["text", "path", "chdir"]

ROLE_NAMES = frozenset(
    "text path file rev command duration datefmt sed awk jq find yq number".split()
)
_ROLE = re.compile(r"([a-z]+)([*+?]?)\Z")
_OPTION = re.compile(r"-[A-Za-z0-9?#]\Z|--[A-Za-z0-9][A-Za-z0-9._-]*\Z|-[A-Za-z][A-Za-z0-9_-]+\Z")
_TAKES_NEXT: frozenset[Arity] = frozenset({"required", "pair"})
_DERIVED = frozenset({"label", "options", "roles", "risky", "long_names"})
# The option lists of a table, with the arity and kind of value their options take.
_LISTS: tuple[tuple[str, Arity, ValueKind], ...] = (
    ("flags", "none", "text"),
    ("values", "required", "text"),
    ("pairs", "pair", "text"),
    ("paths", "required", "path"),
    ("chdir", "required", "chdir"),
    ("optional", "optional", "text"),
    ("attached", "attached", "text"),
)


def _caps(caps: Collection[str]) -> None:
    unknown = set(caps) - CAPABILITIES
    if unknown:
        raise ValueError(f"unknown capabilities {sorted(unknown)}")


class Effect(BaseModel):
    """What an option changes (`sandboxed`), or that it is known but never accepted."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    caps: frozenset[str] = frozenset()
    why: str = ""
    value: bool = False
    ok_values: list[str] = Field(default_factory=list)
    drop: frozenset[str] = frozenset()

    @model_validator(mode="after")
    def _valid(self) -> Effect:
        _caps(self.caps)
        _caps(self.drop)
        return self


class Wrapper(BaseModel):
    """How an exec wrapper (`timeout 5 CMD`, `xargs CMD`) finds the command it runs; its
    options are the program's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Operands before the wrapped command (timeout's duration).
    skip: int = 0
    # The wrapped command receives arguments nobody can see (xargs reads them from stdin).
    appends_args: bool = False
    # The wrapped words are joined and run by a shell (`watch`).
    shell_string: bool = False


@dataclass(frozen=True, slots=True)
class Role:
    name: str
    # "" (exactly one), "?" (at most one), "*" (any number), "+" (at least one).
    count: str


@dataclass(frozen=True, slots=True)
class Option:
    arity: Arity
    kind: ValueKind
    check: str | None

    @property
    def takes_next(self) -> bool:
        """The value may be the next word (`-n 5`)."""
        return self.arity in _TAKES_NEXT


class OptionSet(BaseModel):
    """Options by arity (the header of `programs.toml` says what each list means)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    flags: list[str] = Field(default_factory=list)
    values: list[str] = Field(default_factory=list)
    pairs: list[str] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list)
    chdir: list[str] = Field(default_factory=list)
    optional: list[str] = Field(default_factory=list)
    attached: list[str] = Field(default_factory=list)
    checks: dict[str, str] = Field(default_factory=dict)

    def entries(self) -> list[tuple[str, Arity, ValueKind]]:
        return [(f, arity, kind) for lst, arity, kind in _LISTS for f in getattr(self, lst)]


class Program(OptionSet):
    """A program (or subcommand): its table in `programs.toml` (whose header says what each
    field means), ready for checking."""

    read_only: bool = False
    why: str = ""
    caps: frozenset[str] = frozenset()
    alias_of: str | None = None
    include: tuple[str, ...] = ()
    effects: dict[str, Effect] = Field(default_factory=dict)
    closed: bool = False
    single_dash_long: bool = False
    no_double_dash: bool = False
    leading: frozenset[str] = frozenset()
    operands: tuple[str, ...] = ()
    operands_need: frozenset[str] = frozenset()
    drops_first: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()
    requires_why: str = ""
    numeric: bool = False
    cluster: bool = True
    permute: bool = True
    raw: bool = False
    exact: tuple[tuple[str, ...], ...] = ()
    exact_caps: frozenset[str] = frozenset()
    exact_only: bool = False
    subcommands: dict[str, Program] = Field(default_factory=dict)
    sub_required: bool = False
    other_sub: frozenset[str] | None = None
    other_sub_why: str = ""
    runs: tuple[str, ...] = ()
    refuse_prefixes: tuple[str, ...] = ()
    old_style: bool = False
    derives: tuple[str, ...] = ()
    refuse_in_paths: dict[str, str] = Field(default_factory=dict)
    examples: tuple[str, ...] = ()
    not_examples: tuple[str, ...] = ()
    verify: str | None = None
    anything: bool = False
    wrapper: Wrapper | None = None
    script: Literal["awk", "sed"] | None = None
    assigns_names: bool = False
    url_schemes: tuple[str, ...] = ()
    max_positionals: int | None = None
    positional_caps: frozenset[str] = frozenset()
    positional_why: str = ""
    positional_ok_with: frozenset[str] = frozenset()
    # Set by the loader, never by the data (`prepare`).
    label: str = ""
    options: dict[str, Option] = Field(default_factory=dict)
    roles: tuple[Role, ...] = ()
    risky: bool = False
    long_names: tuple[str, ...] = ()

    model_config = ConfigDict(frozen=False, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _data_only(cls, data: object) -> object:
        if isinstance(data, dict):
            derived = sorted(set(data) & _DERIVED)
            if derived:
                raise ValueError(f"{derived} are computed, not data")
        return data

    @model_validator(mode="after")
    def _valid(self) -> Program:
        for caps in (self.caps, self.exact_caps, self.positional_caps, self.other_sub or ()):
            _caps(caps)
        for role in self.operands:
            m = _ROLE.match(role)
            if m is None or m.group(1) not in ROLE_NAMES:
                raise ValueError(f"unknown operand role {role!r}")
        names = [name for name, _, _ in self.entries()]
        for name in [*names, *self.effects]:
            if not _OPTION.match(name):
                raise ValueError(f"bad option name {name!r}")
        listed = set(names)
        for name, effect in self.effects.items():
            changes = [c for c in effect.caps if not c.startswith("read:")]
            if name in listed and changes:
                raise ValueError(f"{name} is accepted read-only but {effect.why} ({changes})")
        return self

    def prepare(self, label: str, sets: dict[str, OptionSet]) -> None:
        """Compute what checking needs (the loader calls this once per entry)."""
        options: dict[str, Option] = {}
        sources = [sets[name] for name in self.include] + [self]
        for source in sources:
            for name, arity, kind in source.entries():
                options[name] = Option(arity, kind, None)
        for source in sources:
            for name, check in source.checks.items():
                if name not in options:
                    raise ValueError(f"{label}: check for unlisted option {name}")
                options[name] = replace(options[name], check=check)
        self.label = label
        self.options = options
        self.roles = tuple(Role(r.rstrip("*+?"), r[len(r.rstrip("*+?")) :]) for r in self.operands)
        self.risky = (
            self.closed
            or self.wrapper is not None
            or self.script is not None
            or any(not c.startswith("read:") for e in self.effects.values() for c in e.caps)
        )
        self.long_names = tuple(n for n in (*self.effects, *options) if n.startswith("--"))
        for name, sub in self.subcommands.items():
            sub.prepare(f"{label} {name}", sets)

    def drops(self, seen: set[str]) -> frozenset[str]:
        """The base capabilities the options in `seen` remove (`gzip -c` writes nothing)."""
        effects = [self.effects.get(name) for name in seen]
        return frozenset().union(*(e.drop for e in effects if e is not None and not e.ok_values))


class Database(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    option_sets: dict[str, OptionSet] = Field(default_factory=dict)
    harmless_paths: frozenset[str] = frozenset()
    workspace_selected_shims: tuple[str, ...] = ()
    programs: dict[str, Program]


def load_database(text: str) -> Database:
    data = Database.model_validate(tomllib.loads(text))
    for name in {n for p in data.programs.values() for n in p.include}:
        if name not in data.option_sets:
            raise ValueError(f"unknown option set {name!r}")
    for name, prog in data.programs.items():
        if prog.alias_of is None:
            prog.prepare(name, data.option_sets)
    for name, prog in data.programs.items():
        if prog.alias_of is not None:
            base = data.programs.get(prog.alias_of)
            if base is None or base.alias_of is not None:
                raise ValueError(f"{name}: alias of unknown program {prog.alias_of!r}")
            alias = base.model_copy(
                update={"runs": prog.runs or base.runs, "read_only": prog.read_only}
            )
            alias.label = name
            data.programs[name] = alias
    return data


def examples(data: Database) -> list[tuple[str, bool]]:
    """Every (example, accepted) pair of the database, once each (aliases share theirs)."""
    found: dict[str, bool] = {}

    def visit(prog: Program) -> None:
        found.update(dict.fromkeys(prog.examples, True))
        found.update(dict.fromkeys(prog.not_examples, False))
        for sub in prog.subcommands.values():
            visit(sub)

    for prog in data.programs.values():
        visit(prog)
    return list(found.items())


@cache
def database() -> Database:
    raw = resources.files("plan_lsp.policy.shell").joinpath("programs.toml").read_text("utf-8")
    return load_database(raw)
