"""Slash commands over ACP (`available_commands_update`): a prompt that starts with one is
handled through the core, as the editor's buttons are, not sent to the model."""

from __future__ import annotations

import asyncio

from acp import schema

from plan_lsp.acp.approval import run_result
from plan_lsp.acp.frontend import AcpFrontEnd
from plan_lsp.core import Refused, checkpointing, second_reader, workflow
from plan_lsp.core.retry import retry
from plan_lsp.core.workspace import WorkspaceCore
from plan_lsp.protocol.state import WorkMode
from plan_lsp.session import sha256_text

# name → (description, the input's hint when it takes one)
COMMANDS: dict[str, tuple[str, str | None]] = {
    "plan": ("Switch to plan mode: research and write a plan, nothing changes", None),
    "build": ("Switch to build mode: change the workspace", None),
    "approve": ("Approve the submitted plan (shown here first) and build it", None),
    "reject": ("Keep planning: revise the plan with your feedback", "what to change"),
    "review": ("A second reader reviews the plan (read-only); its findings here", None),
    "compact": ("Compact the conversation now", None),
    "usage": ("Tokens and context used so far", None),
    "plans": ("The plans of this folder", None),
    "revert": ("Undo the Do run's work from a checklist item on", "item number (default: last)"),
    "steps": ("Where each checklist item of the approved plan is", None),
    "retry": ("Run again the turn the model server failed, without typing it again", None),
}


def available() -> schema.AvailableCommandsUpdate:
    return schema.AvailableCommandsUpdate(
        session_update="available_commands_update",
        available_commands=[
            schema.AvailableCommand(
                name=name,
                description=description,
                input=schema.AvailableCommandInput(schema.UnstructuredCommandInput(hint=hint))
                if hint
                else None,
            )
            for name, (description, hint) in COMMANDS.items()
        ],
    )


def tell(frontend: AcpFrontEnd) -> None:
    """The slash commands, once the client has the session (after the answer being made)."""
    asyncio.get_running_loop().call_soon(frontend.send, available())


def parse(text: str) -> tuple[str, str] | None:
    """`/name rest` of a known command, else None (the prompt goes to the model)."""
    if not text.startswith("/"):
        return None
    name, _, rest = text[1:].strip().partition(" ")
    return (name, rest.strip()) if name in COMMANDS else None


async def run(core: WorkspaceCore, frontend: AcpFrontEnd, name: str, rest: str) -> str:
    """Carry out command `name`; the turn's stop reason. Raises Refused with the reason."""
    if name in ("plan", "build"):
        await workflow.set_mode(core, WorkMode(name))
        frontend.show(f"Now in {core.session.mode.value} mode.")
    elif name == "approve":
        path = core.session.main_plan_path
        text = core.plan_text(path)
        frontend.show_plan(path, text)  # what is approved is in the conversation
        await workflow.approve(core, sha256=sha256_text(text))
        return await run_result(core)
    elif name == "reject":
        await workflow.reject(core, rest or None)
        return await run_result(core)
    elif name == "compact":
        await workflow.compact(core)
        frontend.show("Compacted the conversation.")
    elif name == "usage":
        used = core.state().usage
        cost = f", ${used.costUsd:.4f}" if used.costUsd is not None else ""
        frontend.show(
            f"Context: {used.contextTokens:,} of {used.contextWindow:,} tokens; in total "
            f"{used.inputTokens:,} in, {used.outputTokens:,} out{cost}; "
            f"{used.compactions} compaction(s)."
        )
    elif name == "plans":
        found = workflow.plans(core).plans
        lines = [f"- {p.title} ({p.status}, {p.revisions} revision(s)): {p.uri}" for p in found]
        frontend.show("\n".join(lines) or "No plans in this folder yet.")
    elif name == "revert":
        await _revert(core, rest)
    elif name == "retry":
        return (await retry(core)).stopReason
    elif name == "review":
        return await _review(core, frontend)
    else:
        states = checkpointing.step_states(core)
        lines = [f"{s.step}. [{s.state}] {s.text}" + (f" ({s.reason})" if s.reason else "")
                 for s in states]  # fmt: skip
        frontend.show("\n".join(lines) or "No approved plan with checklist items.")
    return "end_turn"


async def _revert(core: WorkspaceCore, rest: str) -> None:
    states = [s for s in checkpointing.step_states(core) if s.checkpointId]
    if rest and not rest.isdigit():
        raise Refused(f"/revert takes a checklist item's number, not {rest[:40]!r}")
    wanted = [s for s in states if not rest or s.step == int(rest)]
    if not wanted:
        raise Refused("nothing to revert: no checklist item " + (rest or "was reached") + " yet")
    target = wanted[-1].checkpointId
    assert target is not None
    await checkpointing.revert(core, target)


async def _review(core: WorkspaceCore, frontend: AcpFrontEnd) -> str:
    """The plan's second reader (`core/second_reader.py`, as the LSP server's *Review the
    plan*): its findings as a message, each with the plan line it is about. It never edits,
    never changes the mode or the approval."""
    path = core.session.main_plan_path
    text = core.plan_text(path)
    if not text.strip():
        raise Refused("there is no plan to review yet")
    findings, stop_reason = await second_reader.review(core, path, text)
    if stop_reason == "cancelled":
        frontend.show("The review was cancelled.")
        return stop_reason
    lines = text.splitlines()
    said = [f"Review of the plan ({len(findings)} finding{'' if len(findings) == 1 else 's'}):"]
    for f in findings:
        message = f.message.removeprefix("Reviewer: ")
        said.append(f"- Line {f.line + 1}: {message}\n  > {lines[f.line] if lines else ''}")
    if not findings:
        said = ["Review of the plan: the second reader found no problem."]
    frontend.show("\n".join(said))
    return "end_turn"
