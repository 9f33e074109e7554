"""The capability vocabulary, the protection levels and the result of classifying a command."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

CAPABILITIES: frozenset[str] = frozenset(
    {
        "read:filesystem",
        "write:filesystem",
        "read:process",
        "write:process",
        "read:network",
        "write:network",
        "read:git",
        "write:git",
        "read:package",
        "write:package",
        "execute:subprocess",
        "modify:environment",
    }
)

# Plan mode: looking is fine, changing anything is not.
PLAN_ALLOWED_CAPABILITIES: frozenset[str] = frozenset(
    c for c in CAPABILITIES if c.startswith("read:")
)
NETWORK_CAPABILITIES: frozenset[str] = frozenset({"read:network", "write:network"})
# Under `sandboxed` these show an intent to change things (or cannot work without a network)
# and are refused; everything else runs inside the sandbox.
SANDBOX_REFUSED: frozenset[str] = frozenset(
    {"write:filesystem", "write:git", "write:package", "write:network"}
)

_READ_LOCAL = PLAN_ALLOWED_CAPABILITIES - NETWORK_CAPABILITIES
_SANDBOX_REFUSED_OFFLINE = SANDBOX_REFUSED | NETWORK_CAPABILITIES
SANDBOX_NOTE = "nothing in it shows an intent to change things; it runs inside the sandbox"

Protection = Literal["classified", "sandboxed"]
PROTECTIONS: tuple[Protection, ...] = ("classified", "sandboxed")


@dataclass(frozen=True)
class Classification:
    """`allowed`: the command may run at the protection level it was classified for.
    `reasons` explain the decision in plain words, naming the token that decided it."""

    allowed: bool
    capabilities: frozenset[str]
    reasons: list[str] = field(default_factory=list)
    protection: Protection = "classified"
    # Programs the command line runs, as named, and their subcommands (`git blame`): for
    # checks outside the classifier.
    programs: frozenset[str] = frozenset()
    # Directories git subcommands start in (the working directory, or `git -C DIR`): the
    # repositories whose configuration git will read.
    git_dirs: frozenset[str] = frozenset()

    def to_json(self, cmd: str) -> dict[str, object]:
        return {
            "cmd": cmd,
            "allowed": self.allowed,
            "capabilities": sorted(self.capabilities),
            "reasons": list(self.reasons),
        }


class Findings:
    """What the checks learned about a command line, reason by reason.

    Three kinds of finding: `add` (a capability the command needs), `unproven` (something
    the allow-list does not understand: refused under `classified` only) and `fatal` (refused
    at every level: empty input, nesting too deep)."""

    __slots__ = ("caps", "fatal_seen", "git_dirs", "notes", "programs", "unproven_seen")

    def __init__(self) -> None:
        self.caps: set[str] = set()
        self.fatal_seen = False
        self.unproven_seen = False
        self.programs: set[str] = set()
        self.git_dirs: set[str] = set()
        # (text, kind, capabilities): kind is "cap", "unproven" or "fatal".
        self.notes: list[tuple[str, str, frozenset[str]]] = []

    def add(self, caps: frozenset[str], reason: str) -> None:
        self.caps |= caps
        self.notes.append((reason, "cap", caps))

    def unproven(self, reason: str) -> None:
        self.unproven_seen = True
        self.notes.append((reason, "unproven", frozenset()))

    def fatal(self, reason: str) -> None:
        self.fatal_seen = True
        self.notes.append((reason, "fatal", frozenset()))

    def decide(self, protection: Protection, network: bool) -> Classification:
        if protection == "classified":
            allowed_caps = PLAN_ALLOWED_CAPABILITIES if network else _READ_LOCAL
            ok = not self.fatal_seen and not self.unproven_seen and self.caps <= allowed_caps
        else:
            refused = SANDBOX_REFUSED if network else _SANDBOX_REFUSED_OFFLINE
            ok = not self.fatal_seen and not (self.caps & refused)
        if ok:
            reasons = [text for text, _, _ in self.notes]
            if protection == "sandboxed":
                reasons.append(SANDBOX_NOTE)
        elif protection == "classified":
            reasons = [
                text for text, kind, caps in self.notes if kind != "cap" or not caps <= allowed_caps
            ]
        else:
            reasons = [text for text, kind, caps in self.notes if kind == "fatal" or caps & refused]
        return Classification(
            ok,
            frozenset(self.caps),
            list(dict.fromkeys(reasons)),
            protection,
            frozenset(self.programs),
            frozenset(self.git_dirs),
        )


def caps_text(caps: frozenset[str] | set[str]) -> str:
    return ", ".join(sorted(caps))
