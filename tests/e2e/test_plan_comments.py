"""Plan review through the real server (scripted model): comments on plan lines from the
code action's command and from a `> comment:` line, as diagnostics at the right ranges in
UTF-16 and UTF-8, sent with their quoted lines, re-anchored after a revision that moves lines,
addressed or open, counted by the lens, and approval asking once about open ones; the
grounded check's Warning and its quick fix; the second reader's findings, its refused writes,
and `review_before_approval`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from plan_lsp.server.plain import to_plain
from tests.e2e.quirky_client import Quirks, QuirkyEditor, quirky_server, span_text
from tests.e2e.scripts import requests_of, sample_project, scripted_args, write_script
from tests.e2e.test_buffer_truth import open_empty_plan, plan_turns, session

PLAN = (
    "# Plan: ship the 🚀 edition\n"
    "\n"
    "1. Rename the greeting to 🚀hello in `hello.py`.\n"
    "2. Keep 👍🏽 as it is.\n"
    "3. Check the output by running `python hello.py`.\n"
)
# The revision moves every line down by two, rewrites step 1, keeps step 2 as it was.
REVISED = (
    "# Plan: ship the 🚀 edition\n"
    "\n"
    "Context: one file changes.\n"
    "\n"
    "1. Rename the greeting to 🚀hello, world in `hello.py` (one line).\n"
    "2. Keep 👍🏽 as it is.\n"
    "3. Check the output by running `python hello.py`.\n"
)


def review_diagnostics(ed: QuirkyEditor, uri: str) -> list[dict[str, Any]] | None:
    for params in reversed(ed.received.of("textDocument/publishDiagnostics")):
        if params["uri"] == uri:
            return [d for d in params["diagnostics"] if d.get("source") == "plan review"]
    return None


def text_at(ed: QuirkyEditor, path: Path, rng: dict[str, Any]) -> str:
    r = types.Range(start=types.Position(**rng["start"]), end=types.Position(**rng["end"]))
    return span_text(ed.text(path) or "", r, ed.units)


async def code_actions(
    ed: QuirkyEditor, uri: str, rng: types.Range, diagnostics: tuple[types.Diagnostic, ...] = ()
) -> Any:
    """The code actions as the server sent them (the typed client reads each as a Command)."""
    msg_id = f"actions-{len(ed.received.requests)}-{rng.start.line}"
    protocol = ed.client.protocol
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=rng,
        context=types.CodeActionContext(diagnostics=list(diagnostics)),
    )
    answer = protocol.send_request("textDocument/codeAction", params, msg_id=msg_id)
    protocol._result_types[msg_id] = None  # the response is read after this task awaits
    return to_plain(await asyncio.wrap_future(answer))


async def lens_titles(ed: QuirkyEditor, path: Path) -> list[str]:
    result = await ed.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
    )
    return [lens.command.title for lens in result or [] if lens.command]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8"])
async def test_comment_send_revise_addressed_and_open(tmp_path: Path, encoding: str) -> None:
    turns = plan_turns(PLAN) + plan_turns(REVISED)
    ws, server = session(tmp_path, turns, Quirks(encoding=encoding))  # type: ignore[arg-type]
    async with server as ed:
        assert ed.encoding == encoding
        path = open_empty_plan(ed, ws)
        uri = path.resolve().as_uri()
        await ed.request("planLsp/prompt", {"text": "plan it"})
        await ed.settle()
        # The code action offers a comment on the selection (no text: the client asks).
        actions = await code_actions(
            ed, uri, types.Range(types.Position(2, 3), types.Position(2, 9))
        )
        comment = next(a for a in actions if a["title"] == "Comment on these lines…")
        args = comment["command"]["arguments"][0]
        assert args["range"]["start"]["line"] == 2
        await ed.command(comment["command"]["command"], {**args, "text": "say which line 🎉"})
        # A client without an input box types a `> comment:` line under the line meant.
        ed.type_into(path, PLAN.replace("as it is.\n", "as it is.\n> comment: why keep it?\n"))
        await ed.settle()

        def both() -> list[dict[str, Any]] | None:
            found = review_diagnostics(ed, uri) or []
            comments = [d for d in found if d["code"] == "comment-open"]
            return comments if len(comments) == 2 else None

        diags = sorted(await ed.wait_for("two comment diagnostics", both, 10),
                       key=lambda d: d["range"]["start"]["line"])  # fmt: skip
        assert all(d["severity"] == types.DiagnosticSeverity.Information for d in diags)
        step1 = "1. Rename the greeting to 🚀hello in `hello.py`."
        assert text_at(ed, path, diags[0]["range"]) == step1
        assert text_at(ed, path, diags[1]["range"]) == "2. Keep 👍🏽 as it is."
        listed = (await ed.request("planLsp/comments", {}))["comments"]
        assert [c["status"] for c in listed] == ["open", "open"]
        assert {c["text"] for c in listed} == {"say which line 🎉", "why keep it?"}
        assert any("2 comments — send" in t for t in await lens_titles(ed, path))

        await ed.command("planLsp.sendComments", {})
        await ed.wait_for("the revision", lambda: len(ed.updates("done")) >= 2, 30)
        await ed.settle()
        sent = [r for r in requests_of(tmp_path / "t.jsonl")][-2:]
        opening = json.dumps(sent[0]["messages"], ensure_ascii=False)
        assert "say which line 🎉" in opening and f"> {step1}" in opening
        assert "why keep it?" in opening and "> 2. Keep 👍🏽 as it is." in opening

        listed = (await ed.request("planLsp/comments", {}))["comments"]
        by_text = {c["text"]: c for c in listed}
        assert by_text["say which line 🎉"]["status"] == "addressed"
        assert by_text["why keep it?"]["status"] == "open"
        # Re-anchored through the revision's diff: step 2 moved down two lines.
        assert by_text["why keep it?"]["range"]["start"]["line"] == 5
        assert text_at(ed, path, by_text["why keep it?"]["range"]) == "2. Keep 👍🏽 as it is."
        assert by_text["say which line 🎉"]["range"]["start"]["line"] == 4
        assert "1 of 2 comments addressed" in await lens_titles(ed, path)

        # Approving with the open comment asks once; cancelled, nothing is approved.
        await ed.command("planLsp.approvePlan", {"planUri": uri, "execute": False})
        asked = [m for m in ed.received.of("window/showMessageRequest") if "open" in m["message"]]
        assert len(asked) == 1 and "1 comment" in asked[0]["message"]
        assert (await ed.request("planLsp/state", {}))["planStatus"] == "submitted"
        await ed.command("planLsp.approvePlan", {"planUri": uri, "execute": False})
        asked = [m for m in ed.received.of("window/showMessageRequest") if "open" in m["message"]]
        assert len(asked) == 1
        assert (await ed.request("planLsp/state", {}))["planStatus"] == "approved"


async def test_grounded_check_warns_and_asks_for_a_revision(tmp_path: Path) -> None:
    """A plan naming a file that does not exist: a Warning on the name, whose quick fix asks
    the model for a revision about it."""
    plan = PLAN.replace("in `hello.py`", "in `greeting/hello.py`")
    ws, server = session(tmp_path, plan_turns(plan) + plan_turns(PLAN), Quirks())
    async with server as ed:
        path = open_empty_plan(ed, ws)
        uri = path.resolve().as_uri()
        await ed.request("planLsp/prompt", {"text": "plan it"})

        def missing() -> list[dict[str, Any]] | None:
            found = review_diagnostics(ed, uri) or []
            return [d for d in found if d["code"] == "plan-missing-path"] or None

        [warning] = await ed.wait_for("the grounded check", missing, 20)
        assert warning["severity"] == types.DiagnosticSeverity.Warning
        assert text_at(ed, path, warning["range"]) == "greeting/hello.py"
        rng = types.Range(types.Position(**warning["range"]["start"]),
                          types.Position(**warning["range"]["end"]))  # fmt: skip
        diagnostic = types.Diagnostic(
            rng, warning["message"], types.DiagnosticSeverity.Warning, source="plan review"
        )
        actions = await code_actions(ed, uri, rng, (diagnostic,))
        fix = next(a for a in actions if a["title"] == "Ask for a revision about this")
        assert fix["kind"] == "quickfix"
        await ed.command(fix["command"]["command"], *fix["command"]["arguments"])
        await ed.wait_for("the revision", lambda: len(ed.updates("done")) >= 2, 30)
        revision = json.dumps(requests_of(tmp_path / "t.jsonl")[-2]["messages"])
        assert "greeting/hello.py" in revision and "does not exist" in revision
        await ed.wait_for("no warning left", lambda: not missing(), 20)
        # Without a text (a client with no input box) the line to type the comment on is put in.
        cursor = {"start": {"line": 3, "character": 2}, "end": {"line": 3, "character": 2}}
        await ed.command("planLsp.commentOnPlan", {"range": cursor})
        typed = "2. Keep 👍🏽 as it is.\n> comment: \n3. Check"
        await ed.wait_for("the comment line", lambda: typed in (ed.text(path) or ""), 10)


async def test_second_reader_reports_findings_and_cannot_write(tmp_path: Path) -> None:
    """*Review the plan*: a subagent with a fresh context and read-only tools; its findings
    land as Warnings on the plan's lines; its write and its shell command are refused."""
    reviewer = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "hello.py", "content": ""}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch pwned"}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        {"text": "L3: hello.py prints hi; there is no greeting to rename.\nL99: and more."},
    ]
    ws, server = session(tmp_path, plan_turns(PLAN) + reviewer, Quirks())
    async with server as ed:
        path = open_empty_plan(ed, ws)
        uri = path.resolve().as_uri()
        await ed.request("planLsp/prompt", {"text": "plan it"})
        actions = await code_actions(
            ed, uri, types.Range(types.Position(0, 0), types.Position(0, 0))
        )
        review = next(a for a in actions if a["title"].startswith("Review the plan"))
        result = await ed.command(review["command"]["command"], *review["command"]["arguments"])
        assert result == {"findings": 2, "stopReason": "end_turn"}

        def findings() -> list[dict[str, Any]] | None:
            found = review_diagnostics(ed, uri) or []
            return [d for d in found if d["code"] == "review-finding"] or None

        first, last = await ed.wait_for("the findings", findings, 10)
        assert first["range"]["start"]["line"] == 2 and "no greeting" in first["message"]
        assert last["range"]["start"]["line"] == len(PLAN.splitlines()) - 1
        state = await ed.request("planLsp/state", {})
        assert state["planStatus"] == "submitted" and state["mode"] == "plan"

    assert (ws / "hello.py").read_text() == "print('hi')\n" and not (ws / "pwned").exists()
    sent = requests_of(tmp_path / "t.jsonl")[-4:]
    opening = json.dumps(sent[0]["messages"], ensure_ascii=False)
    assert "plan it" not in opening and "   3  1. Rename the greeting" in opening
    offered = set(sent[0]["tools"])
    assert offered and not offered & {"write_file", "edit_file", "bash", "exit_plan_mode"}
    results = [m for m in sent[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 3
    assert all("not among the tools" in json.dumps(m) for m in results)


async def test_review_before_approval_holds_the_approval_lenses(tmp_path: Path) -> None:
    """With `review_before_approval`, a submitted plan shows no approval lens until the second
    reader has read it; then its findings are on the plan and the approval lenses are back."""
    ws = sample_project(tmp_path / "ws")
    user = tmp_path / "user.toml"
    user.write_text("review_before_approval = true\n")
    answer = {"text": "L4: why keep it?"}
    script = write_script(tmp_path / "s.json", [*plan_turns(PLAN), answer], chunk=7)
    args = scripted_args(script, tmp_path / "t.jsonl")
    async with quirky_server(ws, Quirks(), *args, env={"PLAN_LSP_CONFIG": str(user)}) as ed:
        path = open_empty_plan(ed, ws)
        await ed.request("planLsp/prompt", {"text": "plan it"})
        titles = await lens_titles(ed, path)
        assert "Reviewing the plan before approval…" in titles
        assert not any(t.startswith("Approve") for t in titles)

        def findings() -> list[int] | None:
            found = review_diagnostics(ed, path.resolve().as_uri()) or []
            lines = [d["range"]["start"]["line"] for d in found if d["code"] == "review-finding"]
            return lines or None

        assert await ed.wait_for("the second reader", findings, 20) == [3]
        titles = await lens_titles(ed, path)
        assert "Reviewing the plan before approval…" not in titles
        assert "Approve (ask before edits)" in titles
