"""The capability vocabulary and the result of classifying one shell command."""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class Classification:
    """`allowed` is true only when the command was fully understood and every capability
    it needs is in the allowed set. `reasons` explain the decision in plain words."""

    allowed: bool
    capabilities: frozenset[str]
    reasons: list[str] = field(default_factory=list)

    def to_json(self, cmd: str) -> dict[str, object]:
        return {
            "cmd": cmd,
            "allowed": self.allowed,
            "capabilities": sorted(self.capabilities),
            "reasons": list(self.reasons),
        }


class Findings:
    """What the walker learned about a command line, reason by reason."""

    __slots__ = ("caps", "hard", "notes")

    def __init__(self) -> None:
        self.caps: set[str] = set()
        self.hard = False
        # (text, capabilities the finding adds; None marks a finding that denies outright)
        self.notes: list[tuple[str, frozenset[str] | None]] = []

    def add(self, caps: frozenset[str], reason: str) -> None:
        self.caps |= caps
        self.notes.append((reason, caps))

    def deny(self, reason: str) -> None:
        self.hard = True
        self.notes.append((reason, None))

    def decide(self, allowed: frozenset[str]) -> Classification:
        ok = not self.hard and self.caps <= allowed
        if ok:
            reasons = [text for text, _ in self.notes]
        else:
            reasons = [text for text, caps in self.notes if caps is None or not caps <= allowed]
        return Classification(ok, frozenset(self.caps), _dedupe(reasons))


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def caps_text(caps: frozenset[str] | set[str]) -> str:
    return ", ".join(sorted(caps))
