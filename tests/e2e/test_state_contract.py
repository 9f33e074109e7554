"""The 0.2 contract through the real server: pushed state, history, new session, the
connection test, fixable errors, failed prompts not resent, per-workspace providers, and no
custom notifications to clients that did not ask for them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.e2e.scripts import (
    PLAN_TEXT,
    plan_then_do_turns,
    requests_of,
    sample_project,
    scripted_args,
    write_script,
)
from tests.fake_model_servers import ErrorReply, FakeModelServer, ModelReply, ReplyToolCall
from tests.lsp_harness import running_server


def _states(ed: object) -> list[dict[str, object]]:
    return [u["state"] for u in ed.updates_of("state")]  # type: ignore[attr-defined]


async def test_state_is_pushed_on_every_change(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "s.json", plan_then_do_turns())
    async with running_server([ws], *scripted_args(script, tmp_path / "t.jsonl")) as ed:
        first = await ed.wait_update(lambda u: u["kind"] == "state")
        assert first["state"]["mode"] == "plan" and first["state"]["running"] is False
        assert first["state"]["planShell"] == "classified"
        assert first["state"]["provider"]["name"] == "scripted"
        result = await ed.request("planLsp/prompt", {"text": "Make the greeting polite"})
        states = _states(ed)
        assert any(s["running"] and s["runId"] == result["runId"] for s in states)
        assert states[-1]["planStatus"] == "submitted" and states[-1]["running"] is False
        await ed.request("planLsp/setMode", {"mode": "build"})
        await ed.wait_update(lambda u: u["kind"] == "state" and u["state"]["mode"] == "build")
        # what was pushed last is what planLsp/state answers
        assert _states(ed)[-1] == await ed.state()


async def test_history_replays_the_conversation_and_new_session_clears_it(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "s.json", plan_then_do_turns())
    async with running_server([ws], *scripted_args(script, tmp_path / "t.jsonl")) as ed:
        await ed.request("planLsp/prompt", {"text": "Make the greeting polite"})
        history = (await ed.request("planLsp/history", {}))["updates"]
        kinds = [u["kind"] for u in history]
        assert kinds[0] == "prompt" and history[0]["text"] == "Make the greeting polite"
        assert {"text", "toolCall", "toolResult", "blocked"} <= set(kinds)
        assert "state" not in kinds
        shown_text = "".join(u["delta"] for u in ed.updates_of("text"))
        assert "".join(u["delta"] for u in history if u["kind"] == "text") == shown_text

        state = await ed.request("planLsp/newSession", {"keepApprovedPlan": False})
        assert state["planStatus"] == "none" and state["mode"] == "plan"
        assert (await ed.request("planLsp/history", {}))["updates"] == []

    # after a restart the (new, empty) conversation is still the current one
    async with running_server([ws], *scripted_args(script, tmp_path / "t2.jsonl")) as ed:
        assert (await ed.request("planLsp/history", {}))["updates"] == []


async def test_new_session_can_keep_the_approved_plan(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "s.json", plan_then_do_turns())
    async with running_server([ws], *scripted_args(script, tmp_path / "t.jsonl")) as ed:
        await ed.request("planLsp/prompt", {"text": "Make the greeting polite"})
        await ed.request("planLsp/approvePlan", {"execute": False})
        state = await ed.request("planLsp/newSession", {"keepApprovedPlan": True})
        assert state["planStatus"] == "approved" and state["approvedPlan"]["text"] == PLAN_TEXT
        assert state["mode"] == "build"


async def test_failed_prompt_is_marked_and_not_resent(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    with FakeModelServer() as server:
        server.enqueue(ErrorReply(401, "bad key"), ModelReply(text="hello there"))
        transcript = tmp_path / "t.jsonl"
        args = ["--provider", "openai", "--base-url", server.openai_base_url, "--model", "m",
                "--transcript", str(transcript)]  # fmt: skip
        async with running_server([ws], *args) as ed:
            first = await ed.request("planLsp/prompt", {"text": "first try"})
            assert first["stopReason"] == "error"
            error = ed.updates_of("error")[-1]
            assert error["code"] == "provider_auth" and error["fix"] == {"setting": "apiKey"}
            assert error["failedPrompt"] is True
            await ed.request("planLsp/prompt", {"text": "second try"})
            history = (await ed.request("planLsp/history", {}))["updates"]
            prompts = [u for u in history if u["kind"] == "prompt"]
            assert [p["text"] for p in prompts] == ["first try", "second try"]
            assert prompts[0]["status"] == "failed" and "status" not in prompts[1]
    sent = requests_of(transcript)[-1]["messages"]
    user_texts = [m["content"] for m in sent if m["role"] == "user"]
    assert "second try" in user_texts and "first try" not in user_texts


@contextmanager
def _not_found_server() -> Iterator[str]:
    """A loopback web server that answers every request 404 Not Found (as a web server at a
    URL that is not a model API does); its URL."""

    class NotFound(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = b"<html><body>Not Found</body></html>"
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: Any) -> None:
            return None

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


async def test_connection_test_names_what_to_fix(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    with FakeModelServer() as server:
        server.models = ["llama3"]
        args = ["--provider", "openai", "--base-url", server.openai_base_url]
        async with running_server([ws], *args) as ed:
            state = await ed.state()
            assert state["provider"]["configured"] is False
            assert "model" in state["provider"]["problem"]
            result = await ed.request("planLsp/testConnection", {})
            assert result["ok"] is False and result["fix"] == {"setting": "model"}
        async with running_server([ws], *args, "--model", "llama3") as ed:
            # The model calls the tool it is offered (the test's one tiny request).
            server.enqueue(ModelReply(tool_calls=[ReplyToolCall("ping", {})]))
            result = await ed.request("planLsp/testConnection", {})
            assert result["ok"] is True and "llama3" in result["message"], result
            probe = server.requests[-1].body
            assert probe["tools"][0]["function"]["name"] == "ping" and probe["stream"] is False
            # A server that ignores tools (a chat template without tool support) answers
            # plain text: connected, but an agent could not work with it.
            server.enqueue(ModelReply(text="pong"))
            result = await ed.request("planLsp/testConnection", {})
            assert result["ok"] is False and result["code"] == "provider_no_tools", result
            assert "--jinja" in result["message"] and result["fix"] == {"setting": "model"}
        async with running_server([ws], *args, "--model", "gpt-9") as ed:
            result = await ed.request("planLsp/testConnection", {})
            assert result["ok"] is False and result["code"] == "provider_model"
            assert "llama3" in result["message"]
        # Something answers at the URL, but not a model API (a web server, a wrong path).
        with _not_found_server() as url:
            wrong = ["--provider", "openai", "--base-url", url, "--model", "llama3"]
            async with running_server([ws], *wrong) as ed:
                result = await ed.request("planLsp/testConnection", {})
        assert result["ok"] is False and result["code"] == "provider_not_found", result
        assert "HTTP 404" in result["message"] and result["fix"] == {"setting": "baseUrl"}
        server.models_status = 401
        async with running_server([ws], *args, "--model", "llama3") as ed:
            result = await ed.request("planLsp/testConnection", {})
            assert result["code"] == "provider_auth"
    async with running_server(
        [ws], "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"
    ) as ed:
        result = await ed.request("planLsp/testConnection", {})
        assert result["ok"] is False and result["code"] == "provider_unreachable"
        assert result["fix"] == {"setting": "baseUrl"}


async def test_each_workspace_folder_uses_its_own_provider(tmp_path: Path) -> None:
    a = sample_project(tmp_path / "a")
    b = sample_project(tmp_path / "b")
    with FakeModelServer() as one, FakeModelServer() as two:
        one.enqueue(ModelReply(text="from one"))
        two.enqueue(ModelReply(text="from two"))
        user = tmp_path / "user.toml"
        user.write_text(
            'provider = "openai"\nmodel = "m"\n'
            f'[folders."{a}"]\nbase_url = "{one.openai_base_url}"\n'
            f'[folders."{b}"]\nbase_url = "{two.openai_base_url}"\nmodel = "m2"\n'
        )
        async with running_server([a, b], env={"PLAN_LSP_CONFIG": str(user)}) as ed:
            ra = await ed.request("planLsp/prompt", {"text": "hi", "workspaceUri": a.as_uri()})
            rb = await ed.request("planLsp/prompt", {"text": "hi", "workspaceUri": b.as_uri()})
            assert ra["stopReason"] == rb["stopReason"] == "end_turn"
            sb = await ed.request("planLsp/state", {"workspaceUri": b.as_uri()})
            assert sb["provider"]["baseUrl"] == two.openai_base_url
        assert [r.body["model"] for r in one.requests if r.body] == ["m"]
        assert [r.body["model"] for r in two.requests if r.body] == ["m2"]


async def test_no_custom_notifications_without_the_capability(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "s.json", plan_then_do_turns())
    async with running_server(
        [ws], *scripted_args(script, tmp_path / "t.jsonl"), declare_plan_lsp=False
    ) as ed:
        result = await ed.request("planLsp/prompt", {"text": "Make the greeting polite"})
        assert result["stopReason"] == "plan_submitted"
        await asyncio.sleep(0)
        assert ed.ed.updates == []
        assert isinstance(ed.client.capabilities, types.ClientCapabilities)


async def test_shell_protection_falls_back_visibly(tmp_path: Path) -> None:
    """Where no sandbox proves itself, the state says `classified` and why."""
    ws = sample_project(tmp_path / "ws")
    async with running_server([ws], env={"PLAN_LSP_SANDBOX": "none"}) as ed:
        state = await ed.settled_state()
    assert state["planShell"] == "classified" and state["sandbox"] is None
    assert "no sandbox here" in state["shellProtection"]


async def test_approval_with_the_hash_of_what_the_user_saw(tmp_path: Path) -> None:
    """A client that shows the plan sends the sha256 of the text it showed: a plan that
    changed since is not approved; the text shown is."""
    import hashlib

    from pygls.exceptions import JsonRpcException

    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "s.json", plan_then_do_turns())
    plan = ws / ".plan-lsp" / "plans" / "PLAN.md"
    async with running_server([ws], *scripted_args(script, tmp_path / "t.jsonl")) as ed:
        await ed.request("planLsp/prompt", {"text": "Make the greeting polite"})
        stale = hashlib.sha256(b"an older plan").hexdigest()
        try:
            await ed.request("planLsp/approvePlan", {"execute": False, "sha256": stale})
        except JsonRpcException as exc:
            assert "changed since you saw it" in str(exc)
        else:
            raise AssertionError("a plan the user did not see was approved")
        seen = hashlib.sha256(PLAN_TEXT.encode()).hexdigest()
        state = await ed.request(
            "planLsp/approvePlan", {"execute": False, "sha256": seen, "planUri": plan.as_uri()}
        )
        assert state["approvedPlan"]["sha256"] == seen
