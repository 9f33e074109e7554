"""Permission engine: permission mode + allow/ask/deny rules decide allow, ask or deny.

Runs after the work-mode check. Rules read `tool` or `tool(pattern)` (`bash(git log *)`), the
pattern a linear-time glob (rules may come from a repository) against the primary argument.
Precedence: any deny wins; then a change to a file that runs code later (`autorun.toml`)
asks in every mode unless an allow rule names exactly it; then the first scope (session,
project, user) with a matching rule (ask beats allow); then `MODE_DEFAULTS`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from plan_lsp.policy.autorun import Hit, command_hits, describe, protected
from plan_lsp.policy.glob_match import compile_glob, compile_glob_set
from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.protocol.state import PermissionAnswer, PermissionMode, WorkMode

Verdict = Literal["allow", "ask", "deny"]
CallKind = Literal["read", "agent", "edit", "side_effect"]


class RuleScope(StrEnum):
    SESSION = "session"
    PROJECT = "project"
    USER = "user"


def _defaults(read: Verdict, edit: Verdict, side_effect: Verdict) -> dict[CallKind, Verdict]:
    return {"read": read, "agent": "allow", "edit": edit, "side_effect": side_effect}


# What each permission mode does with each kind of call when no rule matched.
MODE_DEFAULTS: dict[PermissionMode, dict[CallKind, Verdict]] = {
    PermissionMode.ASK: _defaults("allow", "ask", "ask"),
    PermissionMode.AUTO_EDIT: _defaults("allow", "allow", "ask"),
    PermissionMode.YOLO: _defaults("allow", "allow", "allow"),
    PermissionMode.STRICT: _defaults("ask", "ask", "ask"),
}

# An allow/ask rule for a shell command never matches a compound command: `git log *`
# must not allow `git log; rm -rf ~`. Such commands fall through to the mode default.
_SHELL_COMPOUND = re.compile(r"[;&|`\n\r<>]|\$\(")
_RULE_SYNTAX = re.compile(r"(?P<tool>[A-Za-z0-9_.:*?\-]+)(?:\((?P<pattern>.*)\))?", re.DOTALL)


def escape_glob(text: str) -> str:
    """A glob that matches exactly `text`."""
    return re.sub(r"([*?\[])", r"[\1]", text)


@dataclass(frozen=True)
class Rule:
    """One parsed rule: a tool-name glob and an optional argument glob."""

    text: str
    tool: str
    pattern: str | None

    @classmethod
    def parse(cls, text: str) -> Rule:
        stripped = text.strip()
        match = _RULE_SYNTAX.fullmatch(stripped)
        if match is None:
            raise ValueError(
                f"bad permission rule {text!r}: expected a tool name, optionally followed "
                "by an argument pattern in parentheses, e.g. 'read_file', "
                "'bash(git log *)' or 'write_file(src/**)'"
            )
        pattern = match.group("pattern")
        if pattern is not None and not pattern.strip():
            raise ValueError(
                f"bad permission rule {text!r}: the pattern in parentheses is empty; "
                f"write {match.group('tool')!r} alone to match every call"
            )
        tool = match.group("tool")
        pattern = pattern.strip() if pattern else None
        try:
            compile_glob(tool, path_mode=False)
            if pattern is not None:
                # The mode depends on the tool the pattern meets: check both.
                compile_glob(pattern, path_mode=False)
                compile_glob(pattern, path_mode=True)
        except ValueError as exc:
            shown = stripped if len(stripped) <= 80 else stripped[:80] + "..."
            raise ValueError(f"bad permission rule {shown!r}: {exc}") from None
        return cls(stripped, tool, pattern)

    def matches_tool(self, name: str) -> bool:
        return compile_glob(self.tool, path_mode=False).match(name)


@dataclass(frozen=True)
class PermissionDecision:
    verdict: Verdict
    reason: str
    rule: str | None = None
    scope: RuleScope | None = None
    warning: str = ""  # what a file the call changes runs later (`autorun.toml`), or ""


@dataclass(frozen=True)
class _ScopedRule:
    rule: Rule
    verdict: Verdict
    scope: RuleScope
    mode: WorkMode | None = None  # an "allow always" holds in its work mode only


@dataclass(frozen=True)
class _CallView:
    """The forms of a call's primary argument a pattern may be matched against."""

    kind: Literal["command", "path", "none"]
    command: str = ""
    # Path forms: (relative, absolute) lexically and after resolving symlinks.
    lexical: tuple[str, ...] = ()
    resolved: tuple[str, ...] = ()
    # pattern -> whether it matches each form (the command, or lexical then resolved), for
    # every pattern of the rules that apply (`_with_hits`).
    hits: Mapping[str, tuple[bool, ...]] = field(default_factory=dict)
    # The length of a form longer than MAX_MATCHED_CHARS (no pattern is matched then), or 0.
    too_long: int = 0


class PermissionEngine:
    """Rules by scope plus the permission-mode table. One engine per session."""

    def __init__(
        self,
        allow: Sequence[str] = (),
        ask: Sequence[str] = (),
        deny: Sequence[str] = (),
        *,
        scope: RuleScope = RuleScope.PROJECT,
        workspace_roots: Sequence[Path] = (),
    ) -> None:
        self.workspace_roots = [Path(r) for r in workspace_roots]
        self._rules: list[_ScopedRule] = []
        self.add_rules(scope, allow=allow, ask=ask, deny=deny)

    def add_rules(
        self,
        scope: RuleScope,
        allow: Sequence[str] = (),
        ask: Sequence[str] = (),
        deny: Sequence[str] = (),
        mode: WorkMode | None = None,
    ) -> None:
        """Add rules to a scope; every string is parsed first, so a bad one adds nothing."""
        parsed: list[_ScopedRule] = []
        groups: tuple[tuple[Verdict, Sequence[str]], ...] = (
            ("allow", allow),
            ("ask", ask),
            ("deny", deny),
        )
        for verdict, texts in groups:
            if isinstance(texts, str):
                raise ValueError(f"{verdict} rules must be a list of strings, not {texts!r}")
            parsed.extend(_ScopedRule(Rule.parse(t), verdict, scope, mode) for t in texts)
        self._rules.extend(parsed)

    def rules(self, scope: RuleScope | None = None) -> list[tuple[str, str, str | None]]:
        """(verdict, rule text, work mode) per rule, for display."""
        return [
            (r.verdict, r.rule.text, r.mode.value if r.mode else None)
            for r in self._rules
            if scope is None or r.scope is scope
        ]

    def exact_rule(self, definition: ToolDefinition, arguments: Mapping[str, Any]) -> str:
        """The rule that matches exactly this call (used for "always" answers)."""
        view = self._view(definition, arguments)
        name = escape_glob(definition.name)
        if view.kind == "command":
            return f"{name}({escape_glob(view.command)})"
        if view.kind == "path":
            return f"{name}({escape_glob(view.lexical[0])})"
        return name

    def remember(
        self,
        answer: PermissionAnswer,
        definition: ToolDefinition,
        arguments: Mapping[str, Any],
        mode: WorkMode,
    ) -> str | None:
        """Turn an "always" answer into a session rule; returns the rule added. An approval
        holds in its work mode only, a refusal (it only restricts) in every mode."""
        if answer not in ("allow_always", "reject_always"):
            return None
        text = self.exact_rule(definition, arguments)
        try:
            Rule.parse(text)
        except ValueError:  # too long for a rule: the answer holds for this call only
            return None
        if answer == "allow_always":
            self.add_rules(RuleScope.SESSION, allow=[text], mode=mode)
        else:
            self.add_rules(RuleScope.SESSION, deny=[text])
        return text

    def decide(
        self,
        definition: ToolDefinition,
        arguments: Mapping[str, Any],
        *,
        permission_mode: PermissionMode,
        work_mode: WorkMode,
        read_only_proven: bool = False,
    ) -> PermissionDecision:
        view = self._view(definition, arguments)
        applicable = [
            r
            for r in self._rules
            if (r.mode is None or r.mode is work_mode) and r.rule.matches_tool(definition.name)
        ]
        view = self._with_hits(view, applicable)
        for r in applicable:
            if r.verdict == "deny" and self._matches(r.rule, view, restrictive=True):
                return PermissionDecision(
                    "deny",
                    f"denied by the {r.scope.value} rule '{r.rule.text}'{_long_note(view, r)}",
                    r.rule.text,
                    r.scope,
                )
        hits = self.runs_later(definition, arguments, read_only_proven=read_only_proven)
        if hits:
            return self._runs_later_decision(hits, view, applicable)
        for scope in (RuleScope.SESSION, RuleScope.PROJECT, RuleScope.USER):
            for verdict in ("ask", "allow"):
                for r in applicable:
                    if r.scope is not scope or r.verdict != verdict:
                        continue
                    if not self._matches(r.rule, view, restrictive=verdict == "ask"):
                        continue
                    if verdict == "ask" and permission_mode is PermissionMode.YOLO:
                        return PermissionDecision(
                            "allow", "yolo permission mode never prompts", r.rule.text, scope
                        )
                    return PermissionDecision(
                        verdict,
                        f"{verdict} by the {scope.value} rule '{r.rule.text}'{_long_note(view, r)}",
                        r.rule.text,
                        scope,
                    )
        kind = self.call_kind(definition, arguments, read_only_proven=read_only_proven)
        verdict_default = MODE_DEFAULTS[permission_mode][kind]
        return PermissionDecision(
            verdict_default,
            f"permission mode '{permission_mode.value}' {_VERBS[verdict_default]} "
            f"{_KIND_WORDS[kind]}",
        )

    def runs_later(
        self,
        definition: ToolDefinition,
        arguments: Mapping[str, Any],
        *,
        read_only_proven: bool = False,
    ) -> list[Hit]:
        """The files that run code later this call would change: an edit tool's path, or
        the paths and git subcommands a shell command's words name (unless it was proven
        read-only: it then runs in the read-only sandbox)."""
        roots = self.workspace_roots or [Path.cwd()]
        if definition.role == "edit" and definition.safety is not Safety.PLAN_FILE:
            raw = arguments.get("path")
            return protected(raw, roots) if isinstance(raw, str) else []
        if definition.classified_per_call and not read_only_proven:
            command = arguments.get("command")
            return command_hits(command, roots) if isinstance(command, str) else []
        return []

    def _runs_later_decision(
        self, hits: Sequence[Hit], view: _CallView, applicable: Sequence[_ScopedRule]
    ) -> PermissionDecision:
        """Ask, whatever the permission mode, unless an allow rule names this exact call."""
        warning = describe(hits)
        for r in applicable:
            if (
                r.verdict == "allow"
                and r.rule.pattern is not None
                and _exact(r.rule.pattern)
                and _exact(r.rule.tool)
                and self._matches(r.rule, view, restrictive=False)
            ):
                return PermissionDecision(
                    "allow",
                    f"allowed by the {r.scope.value} rule '{r.rule.text}', which names it "
                    f"exactly; {warning}",
                    r.rule.text,
                    r.scope,
                    warning,
                )
        return PermissionDecision(
            "ask", f"asks in every permission mode: {warning}", warning=warning
        )

    def call_kind(
        self,
        definition: ToolDefinition,
        arguments: Mapping[str, Any],
        *,
        read_only_proven: bool = False,
    ) -> CallKind:
        if definition.classified_per_call:
            return "read" if read_only_proven else "side_effect"
        if definition.role == "agent" or definition.safety in (Safety.PLAN_FILE, Safety.SUBAGENT):
            return "agent"
        if definition.safety is Safety.READ_ONLY:
            return "read"
        if definition.role == "edit" and self._inside_workspace(arguments.get("path")):
            return "edit"
        return "side_effect"

    @staticmethod
    def _with_hits(view: _CallView, rules: Sequence[_ScopedRule]) -> _CallView:
        """`view` with every pattern of `rules` matched against each form, one pass per form."""
        if view.kind == "none" or view.too_long:
            return view
        patterns = tuple(dict.fromkeys(r.rule.pattern for r in rules if r.rule.pattern))
        if not patterns:
            return view
        path_mode = view.kind == "path"
        globs = compile_glob_set(patterns, path_mode=path_mode)
        forms = (*view.lexical, *view.resolved) if path_mode else (view.command,)
        hits = [globs.matching(form) for form in forms]
        return replace(
            view,
            hits={p: tuple(i in h for h in hits) for i, p in enumerate(patterns)},
        )

    def _matches(self, rule: Rule, view: _CallView, *, restrictive: bool) -> bool:
        """Restrictive rules (deny, ask) match if any form of the argument matches; allow
        rules only if the path matches both before and after resolving symlinks."""
        if rule.pattern is None:
            return True
        if view.too_long and view.kind != "none":
            return restrictive  # not matched: deny and ask rules apply, allow rules do not
        if view.kind == "command":
            if not restrictive and _SHELL_COMPOUND.search(view.command):
                return False
            return view.hits[rule.pattern][0]
        if view.kind == "path":
            matched = view.hits[rule.pattern]
            lexical = any(matched[: len(view.lexical)])
            resolved = any(matched[len(view.lexical) :])
            return (lexical or resolved) if restrictive else (lexical and resolved)
        return False

    def _view(self, definition: ToolDefinition, arguments: Mapping[str, Any]) -> _CallView:
        spec = definition.primary_argument
        if spec is None:
            return _CallView("none")
        key, kind = spec.name, spec.kind
        value = arguments.get(key)
        if kind == "command":
            command = value.strip() if isinstance(value, str) else ""
            return _CallView("command", command=command, too_long=_over_limit(command))
        raw = value if isinstance(value, str) and value else "."
        if len(raw) > MAX_MATCHED_CHARS:
            return _CallView("path", lexical=(raw,), too_long=len(raw))
        lexical, resolved = self._lexical_forms(raw), self._resolved_forms(raw)
        too_long = max((_over_limit(f) for f in (*lexical, *resolved)), default=0)
        return _CallView("path", lexical=lexical, resolved=resolved, too_long=too_long)

    def _base(self) -> Path:
        return self.workspace_roots[0] if self.workspace_roots else Path.cwd()

    def _lexical_forms(self, raw: str) -> tuple[str, ...]:
        absolute = os.path.normpath(os.path.join(self._base(), raw))
        for root in self.workspace_roots:
            root_text = os.path.normpath(root)
            if absolute == root_text or absolute.startswith(root_text.rstrip("/") + "/"):
                rel = os.path.relpath(absolute, root_text)
                return (PurePosixPath(rel).as_posix(), absolute)
        rel = os.path.normpath(raw) if not os.path.isabs(raw) else absolute
        return (rel, absolute)

    def _resolved_forms(self, raw: str) -> tuple[str, ...]:
        try:
            resolved = (self._base() / raw).resolve()
        except (OSError, RuntimeError, ValueError):
            return ()
        for root in self.workspace_roots:
            try:
                rel = resolved.relative_to(root.resolve())
            except (ValueError, OSError):
                continue
            return (rel.as_posix(), str(resolved))
        return (str(resolved),)

    def _inside_workspace(self, raw: object) -> bool:
        if not isinstance(raw, str) or not raw or "\x00" in raw or not self.workspace_roots:
            return False
        try:
            resolved = (self._base() / raw).resolve()
            return any(resolved.is_relative_to(r.resolve()) for r in self.workspace_roots)
        except (OSError, RuntimeError, ValueError):
            return False


# Rule patterns see at most this many characters of an argument (bounding a decision's cost
# on the event loop); a longer one matches no pattern: deny and ask rules apply, allow not.
MAX_MATCHED_CHARS = 65536


def _exact(pattern: str) -> bool:
    """The pattern has no wildcard: it names one path or one command (`[*]` is a `*`)."""
    return not re.search(r"[*?\[]", re.sub(r"\[[^\]!^]\]", "", pattern))


def _over_limit(form: str) -> int:
    return len(form) if len(form) > MAX_MATCHED_CHARS else 0


def _long_note(view: _CallView, rule: _ScopedRule) -> str:
    if not view.too_long or rule.rule.pattern is None:
        return ""
    return (
        f" (its argument is {view.too_long:,} characters, longer than the "
        f"{MAX_MATCHED_CHARS:,} rule patterns are matched against: deny and ask rules apply "
        "to it)"
    )


_VERBS: dict[Verdict, str] = {"allow": "allows", "ask": "asks before", "deny": "denies"}
_KIND_WORDS: dict[CallKind, str] = {
    "read": "read-only calls",
    "agent": "calls that only change the agent's own state",
    "edit": "file edits inside the workspace",
    "side_effect": "calls that can change things",
}
