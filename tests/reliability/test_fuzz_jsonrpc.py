"""JSON-RPC fuzzing against the real server process over raw pipes: broken framing, invalid
JSON, wrong types for every planLsp/* param and command argument, unknown methods, huge
strings, out-of-range positions on PLAN.md. Every well-formed request is answered, the
process never exits, and a well-formed planLsp/state afterwards still answers correctly.

One server process serves every example; a batch of messages goes out per example. The
`ci` profile (200 examples) runs in CI; `HYPOTHESIS_PROFILE=nightly` runs 10,000 examples
(well over 10,000 messages) by hand."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plan_lsp.session import SessionState
from tests.e2e.scripts import sample_project, write_script
from tests.reliability.fuzz_messages import Batch, FuzzTargets, batches
from tests.reliability.raw_client import RawServer, frame, id_key

NIGHTLY_MIN_MESSAGES = 10_000
PLAN = "# Plan\n\n## Steps\n- [ ] Change `hello.py`.\n- [ ] Nothing else.\n"
# Long enough for a scripted run that a fuzzed prompt or approval started.
ANSWER_TIMEOUT_S = 60.0


class FuzzSession:
    """One server process on one workspace, driven from its own event loop so that a sync
    hypothesis test can reuse it across examples."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.workspace = sample_project(root / "ws")
        self.script = write_script(
            root / "script.json",
            [
                {"tool_calls": [{"name": "plan_write", "arguments": {"content": PLAN}}]},
                {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
            ],
        )
        self.plan_path = self.workspace / ".plan-lsp" / "plans" / "PLAN.md"
        self.targets = FuzzTargets(self.workspace.resolve().as_uri(), self.plan_path.as_uri())
        self.batches = batches(self.targets)
        self.loop = asyncio.new_event_loop()
        self.server: RawServer | None = None
        self.session_id = ""
        self.starts = 0
        self.stats: Counter[str] = Counter()
        self.internal_errors: list[str] = []

    # -- process ---------------------------------------------------------------------------

    async def _start(self) -> RawServer:
        self.starts += 1
        server = await RawServer.start(
            self.workspace,
            "--provider",
            "scripted",
            "--script",
            str(self.script),
            "--plan-shell",
            "classified",
            log_path=self.root / "server.log",
        )
        if self.starts == 1:
            # A submitted plan, open in the "editor": approvals and edits have a target.
            result = await server.request("planLsp/prompt", {"text": "plan it"}, timeout=60)
            assert result["result"]["stopReason"] == "plan_submitted", result
        await server.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": self.targets.plan_uri,
                    "languageId": "markdown",
                    "version": 1,
                    "text": self.plan_path.read_text(),
                }
            },
        )
        state = await server.request("planLsp/state", {})
        self.session_id = state["result"]["sessionId"]
        return server

    def ensure_server(self) -> RawServer:
        if self.server is None or not self.server.alive:
            self.server = self.loop.run_until_complete(self._start())
        return self.server

    def close(self) -> None:
        if self.server is not None:
            self.loop.run_until_complete(self.server.close())
        self.loop.close()

    # -- one example -----------------------------------------------------------------------

    def run(self, batch: Batch) -> None:
        server = self.ensure_server()
        self.loop.run_until_complete(self._run(server, batch))

    async def _run(self, server: RawServer, batch: Batch) -> None:
        for case in batch.cases:
            self.stats[case.category] += case.messages
            self.stats["messages"] += case.messages
        try:
            for data in batch.writes():
                await server.send(data)
        except (ConnectionError, BrokenPipeError):
            pass  # the process died; reported below
        expected = [k for case in batch.cases for k in case.expect]
        probe_id = server.next_id()
        if server.alive:
            try:
                await server.send(
                    frame({"jsonrpc": "2.0", "id": probe_id, "method": "planLsp/state"})
                )
            except (ConnectionError, BrokenPipeError):
                pass
        got = await server.wait_for([*expected, id_key(probe_id)], ANSWER_TIMEOUT_S)
        assert server.alive, f"the server exited (code {server.proc.returncode}); see server.log"
        missing = [k for k in expected if k not in got]
        assert not missing, f"requests never answered: {missing}"
        for key, response in got.items():
            self._check_shape(key, response)
        probe = got.get(id_key(probe_id))
        assert probe is not None, "a well-formed planLsp/state after the batch was not answered"
        assert "result" in probe, probe
        state = SessionState.model_validate(probe["result"])
        assert state.sessionId == self.session_id
        assert state.planUri == self.targets.plan_uri

    def _check_shape(self, key: str, response: dict[str, Any]) -> None:
        assert response.get("jsonrpc") == "2.0", response
        assert ("result" in response) != ("error" in response), response
        if "error" in response:
            error = response["error"]
            assert isinstance(error.get("code"), int) and isinstance(error.get("message"), str)
            if error["code"] == -32603:
                self.internal_errors.append(f"{key}: {error['message'][:200]}")


@pytest.fixture(scope="module")
def fuzz_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzSession]:
    session = FuzzSession(tmp_path_factory.mktemp("fuzz"))
    yield session
    session.close()
    summary = {
        "profile": os.environ.get("HYPOTHESIS_PROFILE", "ci"),
        "server_starts": session.starts,
        "internal_errors": len(session.internal_errors),
        **dict(session.stats),
    }
    sys.stderr.write(f"\nfuzz summary: {json.dumps(summary)}\n")
    for line in session.internal_errors[:20]:
        sys.stderr.write(f"  internal error: {line}\n")
    assert session.starts == 1, "the server process had to be restarted"
    if summary["profile"] == "nightly":
        assert session.stats["messages"] >= NIGHTLY_MIN_MESSAGES


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_fuzzed_messages_are_answered_and_the_server_survives(
    fuzz_session: FuzzSession, data: st.DataObject
) -> None:
    fuzz_session.run(data.draw(fuzz_session.batches, label="batch"))
