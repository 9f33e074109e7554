"""Command knowledge as data: `profiles.toml` loaded into typed profiles.

Adding a command means adding a table to `profiles.toml`; nothing here names a command.
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from plan_lsp.policy.shell.model import CAPABILITIES


def _check_caps(caps: list[str]) -> frozenset[str]:
    unknown = set(caps) - CAPABILITIES
    if unknown:
        raise ValueError(f"unknown capabilities {sorted(unknown)}")
    return frozenset(caps)


class FlagSpec(BaseModel):
    """A flag that changes what the command may do."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    caps: frozenset[str] = frozenset()
    # Infinitive phrase: "`-delete` makes `find` {why}".
    why: str = ""
    value: bool = False
    # With these values the flag adds nothing (e.g. `curl -o /dev/null`, `wget -O -`).
    ok_values: list[str] = Field(default_factory=list)
    # Base capabilities the flag removes when present (with an ok value, if it takes one).
    drop: frozenset[str] = frozenset()

    @model_validator(mode="after")
    def _valid(self) -> FlagSpec:
        _check_caps(list(self.caps))
        _check_caps(list(self.drop))
        return self


class Wrapper(BaseModel):
    """How an exec wrapper (`timeout 5 CMD`, `xargs CMD`) finds the command it runs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value_flags: list[str] = Field(default_factory=list)
    safe_flags: list[str] = Field(default_factory=list)
    # Positionals before the wrapped command (timeout's duration).
    skip: int = 0
    # The wrapped command receives arguments nobody can see (xargs reads them from stdin).
    appends_args: bool = False
    # The wrapped words are joined and run by a shell (`watch`).
    shell_string: bool = False


class Profile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    caps: frozenset[str] = frozenset()
    # Third person phrase: "`ls` {why}".
    why: str = ""
    # The command can do anything at all (eval, interpreters): every capability.
    anything: bool = False
    alias_of: str | None = None
    flags: dict[str, FlagSpec] = Field(default_factory=dict)
    value_flags: list[str] = Field(default_factory=list)
    safe_flags: list[str] = Field(default_factory=list)
    # Accept-list: a flag not listed in `flags`, `value_flags` or `safe_flags` is denied.
    only_safe_flags: bool = False
    # find-style options: `-name`, never clustered.
    single_dash_long: bool = False
    # `--` does not end the options (find).
    no_double_dash: bool = False
    subcommands: dict[str, Profile] = Field(default_factory=dict)
    # Capabilities when a subcommand is not one of `subcommands`; None denies it.
    other_sub: frozenset[str] | None = None
    other_sub_why: str = ""
    # More positionals than this add `positional_caps` (`uniq IN OUT` writes OUT).
    max_positionals: int | None = None
    positional_caps: frozenset[str] = frozenset()
    positional_why: str = ""
    positional_ok_with: list[str] = Field(default_factory=list)
    # Exact argument lists that are harmless (`python --version`).
    exact_forms: list[list[str]] = Field(default_factory=list)
    exact_caps: frozenset[str] = frozenset()
    wrapper: Wrapper | None = None
    # A script argument checked by a named checker (awk, sed).
    script: Literal["awk", "sed"] | None = None
    # Positionals are variable names the command assigns (`read line`).
    assigns_names: bool = False
    # Positionals that are URLs must use one of these schemes.
    url_schemes: list[str] = Field(default_factory=list)
    # A first word without a dash is a bundle of short flags (`tar tzf A`).
    old_style: bool = False

    _risky: bool = PrivateAttr(default=False)
    _long: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _valid(self) -> Profile:
        groups: list[frozenset[str]] = [self.caps, self.exact_caps, self.positional_caps]
        for caps in (*groups, self.other_sub or frozenset()):
            _check_caps(list(caps))
        return self

    def model_post_init(self, context: object, /) -> None:
        # Some flag could add a non-read capability: an argument that might turn out to be
        # a flag (a glob, an expansion) cannot be proven harmless.
        self._risky = (
            self.only_safe_flags
            or self.wrapper is not None
            or self.script is not None
            or any(not c.startswith("read:") for spec in self.flags.values() for c in spec.caps)
        )
        # Every long flag name this profile knows, for GNU-style abbreviations.
        self._long = tuple(
            f for f in (*self.flags, *self.value_flags, *self.safe_flags) if f.startswith("--")
        )

    @property
    def risky(self) -> bool:
        return self._risky

    @property
    def long_names(self) -> tuple[str, ...]:
        return self._long


class ProfileTable(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    commands: dict[str, Profile]


@cache
def profiles() -> dict[str, Profile]:
    raw = resources.files("plan_lsp.policy.shell").joinpath("profiles.toml").read_text("utf-8")
    table = ProfileTable.model_validate(tomllib.loads(raw))
    out = dict(table.commands)
    for name, prof in table.commands.items():
        if prof.alias_of is not None:
            out[name] = table.commands[prof.alias_of]
    return out
