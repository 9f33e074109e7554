"""Execution gate: the check every tool call passes right before it runs.

The name allow-list and the mode's safety check come first (never ask about a call that
cannot run), then the permission engine; right before allowing, the mode is checked again
(a toggle to plan while a prompt was open still refuses). Every decision is logged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from plan_lsp.policy.definitions import (
    PLAN_SHELL_CLASSIFIED,
    PLAN_SHELL_SANDBOXED,
    mode_refusal,
    name_refusal,
)
from plan_lsp.policy.modes import Actor
from plan_lsp.policy.permissions import PermissionEngine
from plan_lsp.policy.ports import ChangePreview, FileChange, PermissionPort, PermissionRequest
from plan_lsp.policy.safety import ToolDefinition
from plan_lsp.policy.sandbox import git_config_hazards, sandbox_kind
from plan_lsp.policy.shell import Classification, Protection, classify_command
from plan_lsp.policy.shell.gitfiles import files_outside
from plan_lsp.protocol.state import PermissionAnswer, PermissionMode, WorkMode

log = logging.getLogger(__name__)

_ANSWERS: frozenset[str] = frozenset({"allow_once", "allow_always", "reject_once", "reject_always"})


class ClassificationLike(Protocol):
    @property
    def allowed(self) -> bool: ...

    @property
    def reasons(self) -> Sequence[str]: ...


class GateSession(Protocol):
    """What the gate needs of a session: the live modes and the audit log."""

    @property
    def mode(self) -> WorkMode: ...

    @property
    def permission_mode(self) -> PermissionMode: ...

    def record(self, kind: str, actor: Actor, data: dict[str, Any]) -> int: ...


Classifier = Callable[[str], ClassificationLike]
SandboxProbe = Callable[[], "str | None"]
GitHazards = Callable[[Path, Classification, Sequence[Path]], Sequence[str]]


def default_git_hazards(repo: Path, shell: Classification, roots: Sequence[Path]) -> list[str]:
    """What in `repo`'s git configuration would run a program that the plan-mode git
    hardening cannot neutralise (`policy/sandbox`), or make an allowed git subcommand read a
    file outside the workspace (`policy/shell/gitfiles.py`)."""
    return [*git_config_hazards(repo), *files_outside(repo, roots, shell.programs)]


@dataclass(frozen=True)
class GateDecision:
    allowed: bool
    observation: dict[str, Any] | None = None  # returned to the model instead of running
    sandbox: bool = False  # run `bash` inside the read-only sandbox
    reason: str = ""
    # A build-mode shell command proven read-only, run unasked: it runs like a plan-mode one.
    read_only_unasked: bool = False
    network: bool = False  # the plan-mode shell may use the network (`planNetwork`)


@dataclass
class _ModeCheck:
    refusal: str | None
    read_only_proven: bool = False


@dataclass
class _CallState:
    """Per-call memo of the classifier's verdicts, by protection level."""

    classification: dict[str, tuple[bool, list[str]]] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)


def summarize_call(definition: ToolDefinition, arguments: Mapping[str, Any]) -> str:
    """One line saying what a call would do, for permission prompts."""
    spec = definition.primary_argument
    if spec is not None and isinstance(arguments.get(spec.name), str):
        return f"{definition.name}: {arguments[spec.name]}"
    text = json.dumps(dict(arguments), ensure_ascii=False, default=str)
    return f"{definition.name} {text[:200]}{'…' if len(text) > 200 else ''}"


class ExecutionGate:
    """One per session. Shell commands are classified "sandboxed" in plan mode when
    `plan_shell` asks for it and a sandbox is proven, else "classified" (always in build
    mode, whose commands are not confined). `classify` replaces the classifier (tests)."""

    def __init__(
        self,
        session: GateSession,
        permissions: PermissionEngine,
        port: PermissionPort,
        *,
        plan_shell: str = "classified",
        classify: Classifier | None = None,
        sandbox_probe: SandboxProbe | None = None,
        plan_network: bool = False,
        roots: Sequence[Path] | None = None,
        git_hazards: GitHazards | None = None,
    ) -> None:
        self.session = session
        self.permissions = permissions
        self.port = port
        self.plan_shell = plan_shell
        self.plan_network = plan_network
        self._roots = tuple(Path(r) for r in roots) if roots is not None else None
        self._classify = classify
        self._sandbox_probe = sandbox_probe or sandbox_kind
        self._git_hazards = git_hazards or default_git_hazards

    def current_mode(self) -> WorkMode:
        return self.session.mode

    async def check(
        self,
        definition: ToolDefinition,
        arguments: dict[str, Any],
        run_id: str,
        allow_names: frozenset[str] | None,
        *,
        preview: ChangePreview | None = None,
    ) -> GateDecision:
        """`preview` computes an edit's change for the permission request, only when asking."""
        name = definition.name
        mode = self.session.mode
        state = _CallState()

        first = _ModeCheck(name_refusal(definition, allow_names))
        if first.refusal is None:
            first = self._mode_check(definition, arguments, mode, state)
        if first.refusal is not None:
            return self._refuse("refuse", name, mode, run_id, first.refusal, stage="mode")
        proven = first.read_only_proven

        decision = self.permissions.decide(
            definition,
            arguments,
            permission_mode=self.session.permission_mode,
            work_mode=mode,
            read_only_proven=proven,
        )
        if decision.verdict == "deny":
            return self._refuse("deny", name, mode, run_id, decision.reason, stage="rules")
        answer: PermissionAnswer | None = None
        if decision.verdict == "ask":
            answer = await self._ask(definition, arguments, run_id, preview, decision.warning)
            remembered = self.permissions.remember(answer, definition, arguments, mode)
            if remembered is not None:
                state.notes["rule"] = remembered
            if answer in ("reject_once", "reject_always"):
                why = "you declined this call"
                if decision.warning:
                    why += f": {decision.warning}"
                return self._refuse("deny", name, mode, run_id, why, stage="user", answer=answer)

        # The mode may have changed while the prompt was open (or any await above).
        final_mode = self.session.mode
        final = self._mode_check(definition, arguments, final_mode, state)
        if final.refusal is not None:
            reason = final.refusal
            if final_mode is not mode:
                reason = f"the session switched to {final_mode.value} mode; {reason}"
            return self._refuse(
                "refuse", name, final_mode, run_id, reason, stage="recheck", answer=answer
            )
        sandbox = (
            definition.classified_per_call
            and final_mode is WorkMode.PLAN
            and self._protection(final_mode) == PLAN_SHELL_SANDBOXED
        )
        reason = decision.reason if answer is None else f"you answered {answer}"
        self._record(
            name,
            final_mode,
            run_id,
            "allow",
            reason,
            stage="final",
            answer=answer,
            sandbox=sandbox,
            **state.notes,
        )
        return GateDecision(
            True,
            None,
            sandbox=sandbox,
            reason=reason,
            read_only_unasked=definition.classified_per_call
            and final_mode is WorkMode.BUILD
            and answer is None
            and final.read_only_proven,
            network=definition.classified_per_call and self.plan_network,
        )

    def _mode_check(
        self,
        definition: ToolDefinition,
        arguments: Mapping[str, Any],
        mode: WorkMode,
        state: _CallState,
    ) -> _ModeCheck:
        refusal = mode_refusal(definition, mode, self.plan_shell)
        if refusal is not None:
            return _ModeCheck(refusal)
        if not definition.classified_per_call:
            return _ModeCheck(None)
        allowed, reasons = self._classification(arguments, state, self._protection(mode))
        if mode is WorkMode.PLAN and not allowed:
            why = "; ".join(reasons) or "it could not be proven read-only"
            return _ModeCheck(
                "plan mode only runs shell commands proven read-only, and this one is not: " + why
            )
        return _ModeCheck(None, read_only_proven=allowed)

    def _protection(self, mode: WorkMode) -> Protection:
        if (
            mode is WorkMode.PLAN
            and self.plan_shell == PLAN_SHELL_SANDBOXED
            and self._sandbox_probe() is not None
        ):
            return PLAN_SHELL_SANDBOXED
        return PLAN_SHELL_CLASSIFIED

    def _shell_roots(self) -> list[Path]:
        return list(self._roots if self._roots is not None else self.permissions.workspace_roots)

    def _git_config_verdict(
        self, shell: Classification, verdict: tuple[bool, list[str]]
    ) -> tuple[bool, list[str]]:
        """Unproven where git, without a sandbox, would read a key naming a program."""
        hazards: list[str] = []
        roots = self._shell_roots()
        for repo in sorted(shell.git_dirs):
            hazards.extend(self._git_hazards(Path(repo), shell, roots))
        if not hazards:
            return verdict
        why = "git would read a repository configuration that names programs: "
        return False, [why + "; ".join(hazards)]

    def _classification(
        self, arguments: Mapping[str, Any], state: _CallState, protection: Protection
    ) -> tuple[bool, list[str]]:
        memo = state.classification.get(protection)
        if memo is not None:
            return memo
        command = arguments.get("command")
        if not isinstance(command, str) or not command.strip():
            verdict = (False, ["no command was given"])
        else:
            try:
                if self._classify is not None:
                    result = self._classify(command)
                    verdict = (bool(result.allowed), list(result.reasons))
                else:
                    # "classified": the classifier is the only wall (strict allow-list);
                    # "sandboxed": in a proven sandbox, refuse only intent to change things.
                    roots = self._shell_roots()
                    shell = classify_command(
                        command,
                        protection=protection,
                        roots=roots or None,
                        cwd=roots[0] if roots else None,
                        network=self.plan_network,
                    )
                    verdict = (bool(shell.allowed), list(shell.reasons))
                    if shell.allowed and protection == PLAN_SHELL_CLASSIFIED:
                        verdict = self._git_config_verdict(shell, verdict)
            except ImportError:
                verdict = (False, ["the shell classifier is not available"])
            except Exception as exc:  # a classifier bug must fail closed
                log.exception("shell classifier failed")
                verdict = (False, [f"the shell classifier failed: {exc}"])
        state.classification[protection] = verdict
        return verdict

    async def _ask(
        self,
        definition: ToolDefinition,
        arguments: dict[str, Any],
        run_id: str,
        preview: ChangePreview | None = None,
        warning: str = "",
    ) -> PermissionAnswer:
        change: FileChange | None = None
        if preview is not None:
            try:
                change = await preview()
            except Exception:  # the prompt then shows the summary alone
                log.exception("cannot compute the change of %s", definition.name)
        request = PermissionRequest(
            run_id=run_id,
            tool=definition.name,
            summary=summarize_call(definition, arguments)
            + (f" (WARNING: {warning})" if warning else ""),
            arguments=arguments,
            change=change,
        )
        try:
            answer = await self.port.request_permission(request)
        except Exception:  # a failed prompt is a "no"
            log.exception("permission prompt failed")
            return "reject_once"
        if answer not in _ANSWERS:
            return "reject_once"
        return answer

    def _refuse(
        self,
        decision: Literal["refuse", "deny"],
        name: str,
        mode: WorkMode,
        run_id: str,
        reason: str,
        **extra: Any,
    ) -> GateDecision:
        """A mode refusal (`tool_not_allowed`) or a permission denial, recorded."""
        self._record(name, mode, run_id, decision, reason, **extra)
        error = "tool_not_allowed" if decision == "refuse" else "permission_denied"
        observation = {"error": error, "tool": name, "reason": reason}
        return GateDecision(False, observation, reason=reason)

    def _record(
        self, name: str, mode: WorkMode, run_id: str, decision: str, reason: str, **extra: Any
    ) -> None:
        data: dict[str, Any] = {
            "tool": name,
            "mode": mode.value,
            "decision": decision,
            "reason": reason,
            "runId": run_id,
        }
        data.update({k: v for k, v in extra.items() if v is not None})
        try:
            self.session.record("gate_decision", Actor.SYSTEM, data)
        except Exception:  # the audit log failing must not crash the run
            log.exception("could not record a gate decision")
