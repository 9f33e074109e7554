"""`plan-lsp demo`: a complete plan → approve → do session, offline, through the real
server over stdio with the scripted provider, printed as a readable transcript."""

from __future__ import annotations

import asyncio
import difflib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from lsprotocol import types

from plan_lsp.demo.client import DemoEditor

HERE = Path(__file__).parent
_MESSAGES = {"deviation": "  note  │ deviation: ", "error": "  error │ ", "message": "  editor│ "}
TASK = "Add a --shout option to the greeter that prints the greeting in capitals."


class Transcript:
    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.allowed: list[str] = []
        self.blocked: list[tuple[str, str]] = []
        self._text = ""
        self.done: list[dict[str, Any]] = []
        self.done_event = asyncio.Event()
        self.drafts = 0

    def say(self, line: str = "") -> None:
        if not self.quiet:
            print(line, flush=True)

    def flush_text(self) -> None:
        if self._text.strip():
            for line in self._text.strip().splitlines():
                self.say(f"  model │ {line}")
        self._text = ""

    def on_update(self, u: dict[str, Any]) -> None:
        kind = u.get("kind")
        if kind == "text":
            self._text += u.get("delta", "")
            return
        self.flush_text()
        if kind == "toolCall" and u.get("toolCallId"):
            args = u.get("arguments", "")
            shown = args if len(args) <= 90 else args[:87] + "..."
            self.say(f"  tool  │ {u['tool']} {shown}")
        elif kind == "blocked":
            self.blocked.append((u["tool"], u.get("reason", "")))
            self.say(f"        │   ✗ BLOCKED: {u.get('reason', '')}")
        elif kind == "toolResult" and not u.get("isError"):
            self.allowed.append(u["tool"])
            lines = (u.get("content") or "").strip().splitlines()
            skip = ("exit code", "(ran in", "stdout:", "stderr:")
            first = [ln for ln in lines if ln.strip() and not ln.startswith(skip)][:1]
            self.say(f"        │   ✓ allowed{': ' + first[0][:80] if first else ''}")
        elif kind == "toolResult":
            data = u.get("content", "")
            if "tool_not_allowed" not in data and "permission_denied" not in data:
                self.say(f"        │   ! error: {data[:100]}")
        elif kind == "planDraft" and u.get("status") == "drafting":
            self.drafts += 1
        elif kind == "modeChanged":
            self.say(f"  mode  │ now {u['mode']} (permission mode {u['permissionMode']})")
        elif kind == "todos":
            marks = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}
            todos = ", ".join(f"{marks[t['status']]} {t['content'][:40]}" for t in u["todos"])
            self.say(f"  todos │ {todos}")
        elif kind in _MESSAGES:
            self.say(f"{_MESSAGES[kind]}{u.get('message')}")
        elif kind == "done":
            self.done.append(u)
            self.done_event.set()


def _diff(before: Path, after: Path) -> list[str]:
    out: list[str] = []
    for path in sorted(after.rglob("*")):
        rel = path.relative_to(after)
        if not path.is_file() or rel.parts[0] in (".plan-lsp",) or "__pycache__" in rel.parts:
            continue
        old = (before / rel).read_text().splitlines() if (before / rel).exists() else []
        new = path.read_text().splitlines()
        out.extend(difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}", lineterm="", n=1))
    return out


async def _session(work: Path, quiet: bool) -> int:
    ws = work / "greeter-project"
    shutil.copytree(HERE / "sample", ws)
    script = work / "script.json"
    shutil.copy(HERE / "script.json", script)
    t = Transcript(quiet)
    editor = DemoEditor(t.on_update)
    t.say(f"plan-lsp demo — sample project copied to {ws}")
    t.say("Starting the language server over stdio (scripted model, offline)…")
    serve = ["serve", "--provider", "scripted", "--script", str(script), "--workspace", str(ws)]
    await editor.client.start_io(
        sys.executable, "-m", "plan_lsp", *serve, "--log-level", "warning",
        # The demo's session state goes with its files, not into the user's state folder.
        env={**os.environ, "PLAN_LSP_STATE_DIR": str(work / "state")},
    )  # fmt: skip
    await editor.client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                workspace=types.WorkspaceClientCapabilities(
                    apply_edit=True,
                    workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
                ),
                window=types.WindowClientCapabilities(
                    show_document=types.ShowDocumentClientCapabilities(support=True)
                ),
                experimental={"planLsp": {}},
            ),
            workspace_folders=[types.WorkspaceFolder(uri=ws.as_uri(), name=ws.name)],
        )
    )
    editor.client.initialized(types.InitializedParams())
    state = await editor.request("planLsp/state", {})
    t.say(
        f"Session {state['sessionId']}: mode {state['mode']}, shell protection "
        f"{state.get('shellProtection') or 'classifier'}"
    )
    t.say("")
    t.say(f"1. PLAN MODE — the user asks: “{TASK}”")
    result = await editor.request("planLsp/prompt", {"text": TASK})
    t.flush_text()
    plan_uri = state["planUri"]
    plan_text = editor.text(plan_uri) or ""
    t.say(
        f"   run ended: {result['stopReason']}; the plan streamed into PLAN.md "
        f"through {editor.edits_applied} incremental edits:"
    )
    for line in plan_text.splitlines():
        t.say(f"   PLAN.md │ {line}")
    changed_in_plan = _diff(HERE / "sample", ws)
    t.say(f"   workspace files changed during planning: {len(changed_in_plan) // 3 or 'none'}")
    t.say("")
    lenses = await editor.code_lenses(plan_uri)
    t.say(
        "2. APPROVAL — code lenses on PLAN.md: "
        + " | ".join(lens.command.title for lens in lenses if lens.command)
    )
    approve = next(
        (lens.command for lens in lenses if lens.command and "auto-accept" in lens.command.title),
        None,
    )
    if approve is None:
        t.say("   no approve lens was offered — demo failed")
        return 1
    t.say(f"   clicking “{approve.title}”")
    t.done_event.clear()
    t.done.clear()
    await editor.execute(approve)
    t.say("")
    t.say("3. DO RUN — executing the approved plan")
    await asyncio.wait_for(t.done_event.wait(), 120)
    t.flush_text()
    final = await editor.request("planLsp/state", {})
    for answer in editor.permission_answers:
        t.say(f"   permission prompt: {answer}")
    t.say("")
    t.say("4. RESULT — changes to the project:")
    diff = _diff(HERE / "sample", ws)
    for line in diff:
        t.say(f"   {line}")
    done = t.done[-1] if t.done else {}
    summary = {
        "planningChangedFiles": len(changed_in_plan) > 0,
        "blocked": [name for name, _ in t.blocked],
        "approvedSha256": (final.get("approvedPlan") or {}).get("sha256", "")[:16],
        "mode": final["mode"],
        "outcome": final["outcome"],
        "doStopReason": done.get("stopReason"),
        "planEdits": editor.edits_applied,
    }
    print("summary: " + json.dumps(summary), flush=True)
    await editor.client.shutdown_async(None)
    editor.client.exit(None)
    await editor.client.stop()
    ok = bool(diff) and not changed_in_plan and len(t.blocked) >= 2
    ok = ok and final["outcome"] == "completed"
    done_text = "OK — nothing changed while planning; the approved plan was executed."
    print("demo: " + (done_text if ok else "FAILED"), flush=True)
    return 0 if ok else 1


def run_demo(keep: bool = False, quiet: bool = False) -> int:
    work = Path(tempfile.mkdtemp(prefix="plan-lsp-demo-"))
    try:
        return asyncio.run(_session(work, quiet))
    finally:
        if keep:
            print(f"demo files kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
