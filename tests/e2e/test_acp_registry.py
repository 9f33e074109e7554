"""What the ACP registry asks of an agent: a manifest valid against the registry's published
schema (`tests/data/acp_registry/agent.schema.json`, from agentclientprotocol/registry), and
at least one auth method — the terminal set-up `plan-lsp acp --setup`, run here against a
loopback model server: it lists the server's models, tests the connection and writes the
user config (nothing when the test fails)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import acp
import jsonschema
import pytest

from plan_lsp import __version__
from tests.e2e.test_acp import Client, _workspace, running_agent
from tests.fake_model_servers import FakeModelServer, ModelReply, ReplyToolCall

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "packaging" / "acp-registry" / "agent.json"
SCHEMA = ROOT / "tests" / "data" / "acp_registry" / "agent.schema.json"


def test_the_manifest_is_valid_for_the_registry() -> None:
    manifest = json.loads(MANIFEST.read_text())
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).validate(manifest)
    assert manifest["version"] == __version__
    assert manifest["distribution"]["uvx"] == {
        "package": f"plan-lsp@{__version__}",
        "args": ["acp"],
    }


async def test_initialize_offers_the_terminal_set_up(tmp_path: Path) -> None:
    _ws, script = _workspace(tmp_path, [])
    async with running_agent(script, Client()) as conn:
        init = await conn.initialize(protocol_version=1)
        (method,) = init.auth_methods
        assert (method.type, method.id, method.args) == ("terminal", "setup", ["--setup"])
        await conn.authenticate(method_id="setup")
        with pytest.raises(acp.RequestError):
            await conn.authenticate(method_id="oauth")


def _setup(config: Path, answers: list[str]) -> subprocess.CompletedProcess[str]:
    # A session of its own: no terminal to read the key from, so it is read from stdin.
    return subprocess.run(
        [sys.executable, "-m", "plan_lsp", "acp", "--setup"],
        input="\n".join(answers) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,
        env={**os.environ, "PLAN_LSP_CONFIG": str(config)},
    )


def test_the_set_up_lists_models_tests_the_connection_and_writes_the_config(
    tmp_path: Path,
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('model = "old"\nlog_level = "debug"\n\n[permissions]\nallow = []\n')
    with FakeModelServer() as server:
        server.models = ["small-model", "fake-model"]
        failed = _setup(config, ["openai", server.openai_base_url, "sk-test", "missing-model"])
        assert failed.returncode == 1, failed.stdout + failed.stderr
        assert "The connection test failed" in failed.stdout and "Nothing written" in failed.stdout
        assert 'model = "old"' in config.read_text()

        server.enqueue(ModelReply(tool_calls=[ReplyToolCall("ping", {})]))
        done = _setup(config, ["openai", server.openai_base_url, "sk-test", "2"])
        assert done.returncode == 0, done.stdout + done.stderr
    assert "1. small-model" in done.stdout and "2. fake-model" in done.stdout
    assert "it calls tools" in done.stdout
    written = tomllib.loads(config.read_text())
    assert {k: written[k] for k in ("provider", "base_url", "model", "api_key")} == {
        "provider": "openai",
        "base_url": server.openai_base_url,
        "model": "fake-model",
        "api_key": "sk-test",
    }
    assert written["log_level"] == "debug" and written["permissions"] == {"allow": []}
    assert config.stat().st_mode & 0o077 == 0

    stopped = _setup(tmp_path / "other.toml", ["openai"])
    assert stopped.returncode == 1 and "Set-up stopped: nothing written." in stopped.stdout
    assert not (tmp_path / "other.toml").exists()
