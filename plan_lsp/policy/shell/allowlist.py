"""The `classified` allow-list as data: `allowlist.toml` loaded into typed programs.

Every option a program accepts here is listed with its exact arity; anything not listed is
refused. Adding a program means adding a table to `allowlist.toml`; nothing here names one.
"""

from __future__ import annotations

import re
import tomllib
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
_OPTION = re.compile(r"-[A-Za-z0-9?#]\Z|--[A-Za-z0-9][A-Za-z0-9-]*\Z|-[A-Za-z][A-Za-z0-9-]+\Z")


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
    why: str = ""
    caps: list[str] = Field(default_factory=list)
    alias_of: str | None = None
    include: list[str] = Field(default_factory=list)
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
    # Whole argument lists accepted as they are (`--version`).
    exact: list[list[str]] = Field(default_factory=list)
    # Nothing but the exact forms is accepted (`python --version`, never `python`).
    exact_only: bool = False
    subcommands: dict[str, ProgramData] = Field(default_factory=dict)
    sub_required: bool = False
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

    @model_validator(mode="after")
    def _valid(self) -> ProgramData:
        unknown = set(self.caps) - CAPABILITIES
        if unknown:
            raise ValueError(f"unknown capabilities {sorted(unknown)}")
        for role in self.operands:
            m = _ROLE.match(role)
            if m is None or m.group(1) not in ROLE_NAMES:
                raise ValueError(f"unknown operand role {role!r}")
        for name, _, _ in self.entries():
            if not _OPTION.match(name):
                raise ValueError(f"bad option name {name!r}")
        return self


class FindData(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    why: str
    caps: list[str]
    # primary -> what its argument is: "none", "text", "path" (a file it reads), "number".
    primaries: dict[str, Literal["none", "text", "path", "number"]]
    operators: list[str]
    leading: list[str] = Field(default_factory=list)


class AllowListData(BaseModel):
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


@dataclass(frozen=True, slots=True)
class Program:
    """A program (or subcommand) ready for checking."""

    label: str
    why: str
    caps: frozenset[str]
    options: dict[str, Option]
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


@dataclass(frozen=True, slots=True)
class AllowList:
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
    return Program(
        label=label,
        why=data.why,
        caps=frozenset(data.caps),
        options=options,
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
    )


def load_allowlist(text: str) -> AllowList:
    data = AllowListData.model_validate(tomllib.loads(text))
    programs: dict[str, Program] = {}
    for name, prog in data.programs.items():
        if prog.alias_of is None:
            programs[name] = _build(name, prog, data.option_sets)
    for name, prog in data.programs.items():
        if prog.alias_of is not None:
            base = programs[prog.alias_of]
            runs = tuple(prog.runs) or base.runs
            programs[name] = replace(base, label=name, runs=runs)
    return AllowList(
        programs,
        frozenset(data.harmless_paths),
        data.find,
        tuple(data.workspace_selected_shims),
    )


@cache
def allowlist() -> AllowList:
    raw = resources.files("plan_lsp.policy.shell").joinpath("allowlist.toml").read_text("utf-8")
    return load_allowlist(raw)
