"""The shell classifier's program database: `programs.toml` loaded into typed programs.

One entry per program (and subcommand), read by both protection levels: `classified`
accepts only the forms of a `read_only` entry (`argcheck.py`: every option with its exact
arity, every operand in its role), `sandboxed` looks up what a command would change
(`argv.py`: `caps`, `effects`, `other_sub`, ...). Adding a program means adding a table to
`programs.toml`; nothing here names one.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
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
    {
        "text",
        "path",
        "file",
        "rev",
        "command",
        "duration",
        "datefmt",
        "sed",
        "awk",
        "jq",
        "find",
        "yq",
        "number",
    }
)
_ROLE = re.compile(r"([a-z]+)([*+?]?)\Z")
_OPTION = re.compile(r"-[A-Za-z0-9?#]\Z|--[A-Za-z0-9][A-Za-z0-9._-]*\Z|-[A-Za-z][A-Za-z0-9_-]+\Z")
_TAKES_NEXT: frozenset[Arity] = frozenset({"required", "pair"})


def _caps(caps: frozenset[str] | list[str], where: str = "") -> None:
    unknown = set(caps) - CAPABILITIES
    if unknown:
        raise ValueError(f"unknown capabilities {sorted(unknown)}{where}")


class Effect(BaseModel):
    """What an option changes (`sandboxed`), or that it is known but never accepted."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    caps: frozenset[str] = frozenset()
    # Infinitive phrase: "`-delete` makes `find` {why}".
    why: str = ""
    value: bool = False
    # With these values the option adds nothing (e.g. `curl -o /dev/null`, `wget -O -`).
    ok_values: list[str] = Field(default_factory=list)
    # Base capabilities the option removes when present (with an ok value, if it takes one).
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


class OptionSet(BaseModel):
    """Options by arity. `values`: a value attached (`-n5`, `--lines=5`) or in the next word;
    `pairs`: the next two words (`jq --arg NAME VALUE`); `optional`: a value only when
    attached; `attached`: a value that must be attached; `paths`: like `values`, naming a
    file the program reads; `chdir`: like `paths`, a directory the program moves into."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    flags: list[str] = Field(default_factory=list)
    values: list[str] = Field(default_factory=list)
    pairs: list[str] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list)
    chdir: list[str] = Field(default_factory=list)
    optional: list[str] = Field(default_factory=list)
    attached: list[str] = Field(default_factory=list)
    # option -> name of a value checker (`valuecheck.py`).
    checks: dict[str, str] = Field(default_factory=dict)

    def entries(self) -> list[tuple[str, Arity, ValueKind]]:
        out: list[tuple[str, Arity, ValueKind]] = []
        out += [(f, "none", "text") for f in self.flags]
        out += [(f, "required", "text") for f in self.values]
        out += [(f, "pair", "text") for f in self.pairs]
        out += [(f, "required", "path") for f in self.paths]
        out += [(f, "required", "chdir") for f in self.chdir]
        out += [(f, "optional", "text") for f in self.optional]
        out += [(f, "attached", "text") for f in self.attached]
        return out


class ProgramData(OptionSet):
    # The options and operands listed are read-only: `classified` may run these forms.
    read_only: bool = False
    why: str = ""
    caps: list[str] = Field(default_factory=list)
    alias_of: str | None = None
    include: list[str] = Field(default_factory=list)
    # Options that change something, or are known but never accepted (`sandboxed` reads
    # them; `classified` refuses every option not listed above).
    effects: dict[str, Effect] = Field(default_factory=dict)
    # Under `sandboxed` too, an option not listed is not allowed.
    closed: bool = False
    # find-style options (`-name`, never clustered); `--` does not end the options.
    single_dash_long: bool = False
    no_double_dash: bool = False
    operands: list[str] = Field(default_factory=list)
    # Operands are only accepted when one of these options is present (`git branch --list`).
    operands_need: list[str] = Field(default_factory=list)
    # These options supply what the first operand role would (`grep -e PATTERN`).
    drops_first: list[str] = Field(default_factory=list)
    # One of these options must be present (here or on the parent command), with the reason.
    requires: list[str] = Field(default_factory=list)
    requires_why: str = ""
    # `-NUM` (head -5, git log -3) is accepted as a count.
    numeric: bool = False
    # Short flags may be clustered (`-la`).
    cluster: bool = True
    # Options may follow operands (GNU getopt); false: the first operand ends the options.
    permute: bool = True
    # No option parsing at all: every word is an operand (`echo`).
    raw: bool = False
    # Whole argument lists accepted as they are (`--version`), and what they need.
    exact: list[list[str]] = Field(default_factory=list)
    exact_caps: list[str] = Field(default_factory=list)
    # Nothing but the exact forms is accepted (`python --version`, never `python`).
    exact_only: bool = False
    subcommands: dict[str, ProgramData] = Field(default_factory=dict)
    sub_required: bool = False
    # The capabilities of a subcommand not listed (`sandboxed`); None: unknown.
    other_sub: list[str] | None = None
    other_sub_why: str = ""
    # Programs it starts by name through PATH (`tar` runs `gzip`, `zgrep` runs `grep`): each
    # is checked like the program itself (not from a folder the workspace controls).
    runs: list[str] = Field(default_factory=list)
    # Words starting with one of these are refused wherever they appear (binutils read
    # `@FILE` as more options from FILE).
    refuse_prefixes: list[str] = Field(default_factory=list)
    # The first word may be a bundle of option letters without a dash (`tar tzf A`): its
    # letters are options, and those taking a value take the next words in order.
    old_style: bool = False
    # A check of the whole command once options and operands are read (`verify.py`).
    verify: str | None = None
    # The program can do anything at all (eval, interpreters): every capability.
    anything: bool = False
    wrapper: Wrapper | None = None
    # A script argument checked by a named checker (`sandboxed`).
    script: Literal["awk", "sed"] | None = None
    # Operands are variable names the command assigns (`read line`).
    assigns_names: bool = False
    # Operands that are URLs must use one of these schemes.
    url_schemes: list[str] = Field(default_factory=list)
    # More operands than this add `positional_caps` (`uniq IN OUT` writes OUT).
    max_positionals: int | None = None
    positional_caps: list[str] = Field(default_factory=list)
    positional_why: str = ""
    positional_ok_with: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _valid(self) -> ProgramData:
        for caps in (self.caps, self.exact_caps, self.positional_caps, self.other_sub or []):
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


class FindData(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    why: str
    caps: list[str]
    # primary -> what its argument is: "none", "text", "path" (a file it reads), "number".
    primaries: dict[str, Literal["none", "text", "path", "number"]]
    operators: list[str]
    leading: list[str] = Field(default_factory=list)


class DatabaseData(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    option_sets: dict[str, OptionSet] = Field(default_factory=dict)
    harmless_paths: list[str] = Field(default_factory=list)
    workspace_selected_shims: list[str] = Field(default_factory=list)
    programs: dict[str, ProgramData]
    find: FindData


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


@dataclass(frozen=True, slots=True)
class Program:
    """A program (or subcommand) ready for checking."""

    label: str
    read_only: bool
    why: str
    caps: frozenset[str]
    options: dict[str, Option]
    effects: dict[str, Effect]
    operands: tuple[Role, ...]
    operands_need: frozenset[str]
    drops_first: frozenset[str]
    requires: frozenset[str]
    requires_why: str
    numeric: bool
    cluster: bool
    permute: bool
    raw: bool
    exact: tuple[tuple[str, ...], ...]
    exact_only: bool
    subcommands: dict[str, Program]
    sub_required: bool
    runs: tuple[str, ...] = ()
    refuse_prefixes: tuple[str, ...] = ()
    old_style: bool = False
    verify: str | None = None
    exact_caps: frozenset[str] = frozenset()
    closed: bool = False
    single_dash_long: bool = False
    no_double_dash: bool = False
    other_sub: frozenset[str] | None = None
    other_sub_why: str = ""
    anything: bool = False
    wrapper: Wrapper | None = None
    script: Literal["awk", "sed"] | None = None
    assigns_names: bool = False
    url_schemes: tuple[str, ...] = ()
    max_positionals: int | None = None
    positional_caps: frozenset[str] = frozenset()
    positional_why: str = ""
    positional_ok_with: frozenset[str] = frozenset()
    # Some option could add a non-read capability: an argument that might turn out to be an
    # option (a glob, an expansion) cannot be proven harmless (`sandboxed`).
    risky: bool = False
    # Every long option name, for GNU-style abbreviations (`sandboxed`).
    long_names: tuple[str, ...] = field(default=())

    def drops(self, seen: set[str]) -> frozenset[str]:
        """The base capabilities the options in `seen` remove (`gzip -c` writes nothing)."""
        out: set[str] = set()
        for name in seen:
            effect = self.effects.get(name)
            if effect is not None and not effect.ok_values:
                out |= effect.drop
        return frozenset(out)


@dataclass(frozen=True, slots=True)
class Database:
    programs: dict[str, Program]
    harmless_paths: frozenset[str]
    find: FindData
    workspace_selected_shims: tuple[str, ...] = ()


def _build(label: str, data: ProgramData, sets: dict[str, OptionSet]) -> Program:
    options: dict[str, Option] = {}
    sources = [sets[name] for name in data.include] + [data]
    for source in sources:
        for name, arity, kind in source.entries():
            options[name] = Option(arity, kind, None)
    for source in sources:
        for name, check in source.checks.items():
            if name not in options:
                raise ValueError(f"{label}: check for unlisted option {name}")
            old = options[name]
            options[name] = Option(old.arity, old.kind, check)
    roles = []
    for raw in data.operands:
        m = _ROLE.match(raw)
        assert m is not None  # validated
        roles.append(Role(m.group(1), m.group(2)))
    subs = {name: _build(f"{label} {name}", sub, sets) for name, sub in data.subcommands.items()}
    risky = (
        data.closed
        or data.wrapper is not None
        or data.script is not None
        or any(not c.startswith("read:") for e in data.effects.values() for c in e.caps)
    )
    long_names = tuple(n for n in (*data.effects, *options) if n.startswith("--"))
    return Program(
        label=label,
        read_only=data.read_only,
        why=data.why,
        caps=frozenset(data.caps),
        options=options,
        effects=dict(data.effects),
        operands=tuple(roles),
        operands_need=frozenset(data.operands_need),
        drops_first=frozenset(data.drops_first),
        requires=frozenset(data.requires),
        requires_why=data.requires_why,
        numeric=data.numeric,
        cluster=data.cluster,
        permute=data.permute,
        raw=data.raw,
        exact=tuple(tuple(form) for form in data.exact),
        exact_only=data.exact_only,
        subcommands=subs,
        sub_required=data.sub_required,
        runs=tuple(data.runs),
        refuse_prefixes=tuple(data.refuse_prefixes),
        old_style=data.old_style,
        verify=data.verify,
        exact_caps=frozenset(data.exact_caps),
        closed=data.closed,
        single_dash_long=data.single_dash_long,
        no_double_dash=data.no_double_dash,
        other_sub=None if data.other_sub is None else frozenset(data.other_sub),
        other_sub_why=data.other_sub_why,
        anything=data.anything,
        wrapper=data.wrapper,
        script=data.script,
        assigns_names=data.assigns_names,
        url_schemes=tuple(data.url_schemes),
        max_positionals=data.max_positionals,
        positional_caps=frozenset(data.positional_caps),
        positional_why=data.positional_why,
        positional_ok_with=frozenset(data.positional_ok_with),
        risky=risky,
        long_names=long_names,
    )


def load_database(text: str) -> Database:
    data = DatabaseData.model_validate(tomllib.loads(text))
    for name in {n for p in data.programs.values() for n in p.include}:
        if name not in data.option_sets:
            raise ValueError(f"unknown option set {name!r}")
    programs: dict[str, Program] = {}
    for name, prog in data.programs.items():
        if prog.alias_of is None:
            programs[name] = _build(name, prog, data.option_sets)
    for name, prog in data.programs.items():
        if prog.alias_of is not None:
            base = programs.get(prog.alias_of)
            if base is None:
                raise ValueError(f"{name}: alias of unknown program {prog.alias_of!r}")
            runs = tuple(prog.runs) or base.runs
            programs[name] = replace(base, label=name, runs=runs, read_only=prog.read_only)
    return Database(
        programs,
        frozenset(data.harmless_paths),
        data.find,
        tuple(data.workspace_selected_shims),
    )


@cache
def database() -> Database:
    raw = resources.files("plan_lsp.policy.shell").joinpath("programs.toml").read_text("utf-8")
    return load_database(raw)
