"""The wire contract (`plan_lsp/protocol/`) holds for what the real server sends.

Scripted sessions through the real server — plan → approve → Do, refused calls, a permission
request, questions, a cancel, mode switches, errors, revisions, history, a new session —
capture every `planLsp/update`, every `planLsp/*` result and every request the server sends
the client, and validate each against the models. The models forbid undeclared fields, and
nested values the contract models leniently are compared with what validation kept, so a
field the server sends but the contract lacks fails here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pydantic import BaseModel, TypeAdapter
from pygls.uris import to_fs_path

from plan_lsp.protocol import methods, updates
from plan_lsp.protocol.params import WireModel
from plan_lsp.server.plain import to_plain
from tests import lsp_harness
from tests.e2e.scripts import PLAN_TEXT, sample_project, scripted_args, write_script
from tests.lsp_harness import Editor, running_server

UPDATE = TypeAdapter(updates.Update)
METHODS = {m.name: m for m in (*methods.METHODS, *methods.COMMANDS)}
CLIENT_REQUESTS = {m.name: m for m in methods.CLIENT_REQUESTS}


def _dropped(sent: Any, kept: Any, where: str) -> list[str]:
    """Keys present in what was sent but not in what the model kept (undeclared fields of
    leniently modelled nested values)."""
    if isinstance(sent, dict) and isinstance(kept, dict):
        missing = [f"{where}.{k}" for k in sent if k not in kept]
        return missing + [
            p for k, v in sent.items() if k in kept for p in _dropped(v, kept[k], f"{where}.{k}")
        ]
    if isinstance(sent, list) and isinstance(kept, list) and len(sent) == len(kept):
        return [p for i, (a, b) in enumerate(zip(sent, kept, strict=True)) for p in
                _dropped(a, b, f"{where}[{i}]")]
    return []


def _unsent(value: Any, where: str) -> list[str]:
    """Fields of a value sent whole (any model but the contract's own `WireModel`s, whose
    defaulted fields may be left out) that the server did not send."""
    if isinstance(value, BaseModel):
        missing = []
        if not isinstance(value, WireModel):
            sent = value.model_fields_set
            missing = [f"{where}.{f}" for f in type(value).model_fields if f not in sent]
        return missing + [
            p for f in value.model_fields_set for p in _unsent(getattr(value, f), f"{where}.{f}")
        ]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _unsent(v, f"{where}[{i}]")]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _unsent(v, f"{where}.{k}")]
    return []


def conform(model: type[BaseModel] | TypeAdapter[Any], payload: Any, what: str) -> Any:
    adapter = model if isinstance(model, TypeAdapter) else TypeAdapter(model)
    value = adapter.validate_python(payload)
    kept = adapter.dump_python(value, mode="json")
    dropped = _dropped(payload, kept, what)
    assert not dropped, f"{what}: fields the contract lacks: {dropped}"
    unsent = _unsent(value, what)
    assert not unsent, f"{what}: fields the contract says are always sent are missing: {unsent}"
    return value


class Wire:
    """Every planLsp/* request through here; its result is validated and recorded."""

    def __init__(self, ed: Editor) -> None:
        self.ed = ed
        self.results: list[tuple[str, Any]] = []

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        entry = METHODS[method]
        assert entry.params is not None and entry.result is not None
        conform(entry.params, params or {}, f"{method} params")
        if "/" in method:
            result = await self.ed.request(method, params or {})
        else:
            result = await self.ed.command(method, params or {})
        conform(entry.result, result, f"{method} result")
        self.results.append((method, result))
        return result

    def check_everything_else(self) -> set[str]:
        """Every update and every server→client request seen so far; the kinds seen."""
        for index, update in enumerate(self.ed.ed.updates):
            conform(UPDATE, update, f"update #{index} ({update.get('kind')})")
        for params in self.ed.ed.permission_requests:
            conform(CLIENT_REQUESTS["planLsp/requestPermission"].params, params, "permission")  # type: ignore[arg-type]
        for params in self.ed.ed.question_requests:
            conform(CLIENT_REQUESTS["planLsp/askUser"].params, params, "askUser")  # type: ignore[arg-type]
        return {u["kind"] for u in self.ed.ed.updates}


def _saving_client(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The harness's client also declares `saveDocuments`; what it is asked is recorded."""
    lsp_harness.declare_save_documents(monkeypatch)
    return []


def _answer_saves(ed: Editor, asked: list[dict[str, Any]]) -> None:
    def save(params: Any) -> dict[str, Any]:
        p = to_plain(params)
        conform(CLIENT_REQUESTS["planLsp/saveDocument"].params, p, "saveDocument")  # type: ignore[arg-type]
        asked.append(p)
        text = ed.buffer_text(Path(to_fs_path(p["uri"]) or ""))
        if text is None:
            return {"saved": False}
        Path(to_fs_path(p["uri"]) or "").write_text(text)
        answer = {"saved": True}
        conform(CLIENT_REQUESTS["planLsp/saveDocument"].result, answer, "saveDocument result")  # type: ignore[arg-type]
        return answer

    ed.client.protocol.fm.features["planLsp/saveDocument"] = save


REVISED_PLAN = PLAN_TEXT + "3. Say that it is done.\n"


async def _raw_request(ed: Editor, method: str, params: Any) -> Any:
    """A request's answer as the server sent it (not structured into lsprotocol's types,
    which read a code action as a command)."""
    protocol_ = ed.client.protocol
    msg_id = f"raw-{method}-{len(ed.ed.updates)}"
    future = protocol_.send_request(method, params, msg_id=msg_id)
    protocol_._result_types.pop(msg_id, None)
    return to_plain(await asyncio.wait_for(asyncio.wrap_future(future), 60))


async def _lens_and_action_commands(ed: Editor, uri: str) -> list[dict[str, Any]]:
    """The commands the plan's code lenses and code actions carry, as sent."""
    document = types.TextDocumentIdentifier(uri=uri)
    lenses = await _raw_request(
        ed, types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensParams(text_document=document)
    )
    start = types.Position(line=0, character=0)
    actions = await _raw_request(
        ed,
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionParams(
            text_document=document,
            range=types.Range(start=start, end=start),
            context=types.CodeActionContext(diagnostics=[]),
        ),
    )
    found = [lens["command"] for lens in lenses or []]
    for action in actions or []:
        # a Command, or a CodeAction carrying one
        found.append(action["command"] if isinstance(action["command"], dict) else action)
    return found


def _session_turns() -> list[dict[str, Any]]:
    questions = [{"id": "tone", "text": "How polite?", "options": ["polite", "very polite"]}]
    return [
        {
            "text": "Reading first.",
            "tool_calls": [
                {"name": "ask_user", "arguments": {"questions": questions}},
                {"name": "read_file", "arguments": {"path": "hello.py"}},
                # enough older conversation for planLsp/compact to have something to do
                {"name": "read_file", "arguments": {"path": "notes.txt"}},
            ],
        },
        {
            "text": "Let me just fix it now.",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "hello.py", "content": "oops"}},
                {"name": "bash", "arguments": {"command": "rm -rf ."}},
            ],
        },
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": PLAN_TEXT}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        # rejected with feedback: the revision
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": REVISED_PLAN}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        # the Do run
        {
            "tool_calls": [
                {
                    "name": "todo_write",
                    "arguments": {"todos": [{"content": "Greet", "status": "in_progress"}]},
                }
            ]
        },
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {
                        "path": "hello.py",
                        "old_text": "print('hi')",
                        "new_text": "print('hello, world')",
                    },
                },
                {"name": "write_file", "arguments": {"path": "extra.txt", "content": "x\n"}},
                {"name": "write_file", "arguments": {"path": "denied.txt", "content": "x\n"}},
            ]
        },
        {"text": "Done: the greeting is updated."},
    ]


async def test_plan_reject_approve_do_conforms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = sample_project(tmp_path / "ws")
    (ws / "notes.txt").write_text("A line of notes about the greeting and its tone.\n" * 600)
    script = write_script(tmp_path / "s.json", _session_turns())
    asked_saves = _saving_client(monkeypatch)
    args = scripted_args(script, tmp_path / "t.jsonl")
    async with running_server([ws], *args, permission_requests=True, questions=True) as ed:
        _answer_saves(ed, asked_saves)
        ed.ed.answer_questions = lambda p: {"tone": ["polite"]}
        ed.ed.answer_permission = lambda p: (
            "reject_once" if "denied.txt" in p["summary"] else "allow_once"
        )
        wire = Wire(ed)

        # The initialize answer advertises exactly the contract's methods and commands.
        experimental = ed.init_result.capabilities.experimental["planLsp"]  # type: ignore[attr-defined]
        assert set(experimental) == set(methods.EXPERIMENTAL_SERVER_FIELDS)
        assert sorted(experimental["methods"]) == sorted(m.name for m in methods.METHODS)
        assert sorted(experimental["commands"]) == sorted(m.name for m in methods.COMMANDS)
        assert experimental["notifications"] == ["planLsp/update"]

        await wire.call("planLsp/state")
        first = await wire.call("planLsp/prompt", {"text": "Make the greeting polite"})
        assert first["stopReason"] == "plan_submitted"
        await wire.call("planLsp/rejectPlan", {"feedback": "Say when it is done."})
        revised = await ed.wait_update(
            lambda u: u["kind"] == "done" and u["runId"] != first["runId"]
        )
        assert revised["stopReason"] == "plan_submitted"
        revisions = await wire.call("planLsp/planRevisions")
        assert revisions["previousRevision"] == 1 and revisions["currentRevision"] == 2
        await wire.call("planLsp.showPreviousRevision", {})

        plan_uri = (ws / ".plan-lsp" / "plans" / "PLAN.md").resolve().as_uri()
        commands = await _lens_and_action_commands(ed, plan_uri)
        assert {"planLsp.approvePlan", "planLsp.rejectPlan"} <= {c["command"] for c in commands}
        assert any(c["arguments"][0].get("execute") is False for c in commands)  # an action
        for c in commands:
            entry = METHODS[c["command"]]  # every command they carry is the contract's
            assert entry.params is not None
            conform(entry.params, c["arguments"][0], f"{c['command']} argument")
        state = await wire.call(
            "planLsp.approvePlan", {"planUri": plan_uri, "permissionMode": "ask"}
        )
        assert state["planStatus"] == "approved"
        done = await ed.wait_update(
            lambda u: u["kind"] == "done" and u["runId"] not in (first["runId"], revised["runId"])
        )
        assert done["stopReason"] == "end_turn" and done["deviations"] == ["extra.txt"]

        await wire.call("planLsp/setPermissionMode", {"permissionMode": "auto_edit"})
        history = await wire.call("planLsp/history")
        assert history["updates"]
        await wire.call("planLsp/testConnection")
        compacted = await wire.call("planLsp/compact")
        assert compacted["usage"]["compactions"] >= 1
        await wire.call("planLsp/setMode", {"mode": "plan"})
        await wire.call("planLsp/newSession", {"keepApprovedPlan": True})

        kinds = wire.check_everything_else()
        assert ed.ed.permission_requests and ed.ed.question_requests and asked_saves
        assert {b["error"] for b in ed.updates_of("blocked")} == {
            "tool_not_allowed",
            "permission_denied",
        }
    expected = {
        "prompt", "text", "toolCall", "toolResult", "blocked", "planDraft", "modeChanged",
        "todos", "question", "permission", "done", "deviation", "state", "compaction",
    }  # fmt: skip
    assert expected <= kinds, expected - kinds


async def _wait_for_file(path: Path) -> None:
    while not path.exists():
        await asyncio.sleep(0.02)


async def test_cancel_mode_switch_and_errors_conform(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    turns: list[dict[str, Any]] = [
        # cancelled by planLsp/cancel
        {"delay_ms": 30, "text": "y" * 2000},
        # stopped by a switch to plan mode
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo > started; sleep 30"}}]},
        {"text": "stopped"},
        # a provider error, and a fixable one
        {"error": {"kind": "rate_limit", "message": "slow down", "retry_after": 3}},
        {"error": {"kind": "auth", "message": "bad key"}},
        # a call cut off / with arguments that are not an object
        {"tool_calls": [{"name": "read_file", "arguments": '{"path": '}]},
        {"text": "sorry"},
        # a subagent
        {"tool_calls": [{"name": "task", "arguments": {"prompt": "look", "description": "a"}}]},
        {"text": "child done"},
        {"text": "parent done"},
    ]
    script = write_script(tmp_path / "s.json", turns)
    args = [*scripted_args(script, tmp_path / "t.jsonl"), "--permission-mode", "yolo"]
    async with running_server([ws], *args) as ed:
        wire = Wire(ed)
        await wire.call("planLsp/setMode", {"mode": "build"})

        run = asyncio.ensure_future(wire.call("planLsp/prompt", {"text": "talk"}))
        await ed.wait_update(lambda u: u["kind"] == "text")
        await wire.call("planLsp/cancel", {})
        assert (await asyncio.wait_for(run, 60))["stopReason"] == "cancelled"

        run = asyncio.ensure_future(wire.call("planLsp/prompt", {"text": "run it"}))
        await asyncio.wait_for(_wait_for_file(ws / "started"), 30)
        switched = await wire.call("planLsp/toggleMode")
        assert [c["tool"] for c in switched["cancelled"]] == ["bash"]
        await asyncio.wait_for(run, 60)

        for text in ("one", "two", "three", "four"):
            await wire.call("planLsp/prompt", {"text": text})
        history = await wire.call("planLsp/history")
        assert any(u.get("status") == "failed" for u in history["updates"])

        kinds = wire.check_everything_else()
        errors = ed.updates_of("error")
        assert {e.get("code") for e in errors} >= {"provider_rate_limited", "provider_auth"}
        assert any(e.get("fix") == {"setting": "apiKey"} for e in errors)
    assert any(u.get("subagent") for u in ed.updates_of("toolCall"))
    assert {"cancelledCalls", "error", "done", "modeChanged"} <= kinds


async def test_a_plan_changed_while_no_server_watched_conforms(tmp_path: Path) -> None:
    """The restored session's updates, `planDraft` `changedOnDisk` among them."""
    ws = sample_project(tmp_path / "ws")
    turns = [
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": PLAN_TEXT}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    ]
    script = write_script(tmp_path / "s.json", turns)
    async with running_server([ws], *scripted_args(script)) as ed:
        wire = Wire(ed)
        await wire.call("planLsp/prompt", {"text": "plan it"})
        await wire.call("planLsp.approvePlan", {"execute": False})
        wire.check_everything_else()
    (ws / ".plan-lsp" / "plans" / "PLAN.md").write_text(PLAN_TEXT + "3. One more step.\n")
    async with running_server([ws], *scripted_args(script)) as ed:
        await ed.wait_update(
            lambda u: u["kind"] == "planDraft" and u.get("status") == "changedOnDisk"
        )
        assert (await Wire(ed).call("planLsp/state"))["planStatus"] == "drafting"
        Wire(ed).check_everything_else()


@pytest.mark.parametrize("stop", ["limit", "context_full"])
async def test_runs_stopped_by_the_budget_conform(tmp_path: Path, stop: str) -> None:
    ws = sample_project(tmp_path / "ws")
    (ws / "notes.txt").write_text("A line of notes about the greeting and its tone.\n" * 600)
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]}
    script = write_script(tmp_path / "s.json", [read, read, read, {"text": "done"}])
    args = scripted_args(script)
    env: dict[str, str] = {}
    if stop == "limit":
        env["PLAN_LSP_LIMITS"] = json.dumps({"run_tokens": 8_000})
    else:
        args = [*args, "--context-window", "1024"]  # the tools alone do not fit
    async with running_server([ws], *args, env=env) as ed:
        wire = Wire(ed)
        result = await wire.call("planLsp/prompt", {"text": "read the notes"})
        assert result["stopReason"] == stop
        wire.check_everything_else()
        assert ed.updates_of("error")[-1]["code"] == stop


def test_every_update_kind_has_one_model() -> None:
    kinds = [m.model_fields["kind"].annotation for m in updates.UPDATE_MODELS]
    names = [k.__args__[0] for k in kinds]  # type: ignore[union-attr]
    assert len(set(names)) == len(names)
    adapter: Callable[[Any], Any] = UPDATE.validate_python
    with pytest.raises(ValueError, match="does not match any of the expected tags"):
        adapter({"kind": "nonsense", "runId": None, "workspaceUri": "file:///w"})
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        adapter({"kind": "text", "runId": None, "workspaceUri": "file:///w", "delta": "", "x": 1})
