"""`plan-lsp acp --setup`: the terminal set-up an ACP client runs for its auth method (the
registry's terminal auth) — the provider, the base URL, the API key, a model from the
server's list; the connection is tested, then the user config is written. Exit status 0:
set up."""

from __future__ import annotations

import asyncio
import getpass
import importlib
import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from acp import schema

from plan_lsp.config import user_config_path

PROVIDERS = {"openai": "an OpenAI-compatible server", "anthropic": "Anthropic's API"}
KEYS = ("provider", "base_url", "model", "api_key")
TIMEOUT_S = 30.0

# The registry's terminal auth: the client runs `plan-lsp acp --setup` in a terminal.
SETUP = schema.TerminalAuthMethod(
    id="setup",
    name="Set up the model server",
    description="Choose the provider, base URL, model and API key; the connection is tested "
    "and the user config written",
    type="terminal",
    args=["--setup"],
)


def run_setup() -> int:
    try:
        return _setup()
    except (EOFError, KeyboardInterrupt):
        print("\nSet-up stopped: nothing written.")
        return 1


def _setup() -> int:
    from plan_lsp.providers.base import ProviderError
    from plan_lsp.providers.factory import make_provider

    path = user_config_path(os.environ)
    try:
        current = tomllib.loads(path.read_text()) if path.is_file() else {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        print(f"Cannot read {path}: {exc}. Fix or remove it, then run this again.")
        return 1
    print(f"Setting up plan-lsp's model server (written to {path}).")
    known = current.get("provider") if current.get("provider") in PROVIDERS else "openai"
    for name, what in PROVIDERS.items():
        print(f"  {name}: {what}")
    provider = input(f"Provider [{known}]: ").strip() or known
    if provider not in PROVIDERS:
        print(f"Unknown provider {provider!r}: choose one of {', '.join(PROVIDERS)}.")
        return 1
    base_url = input("Base URL (empty: the provider's own): ").strip() or None
    api_key = getpass.getpass("API key (empty: none or from the environment): ").strip() or None
    try:
        models = asyncio.run(asyncio.wait_for(_models(provider, base_url, api_key), TIMEOUT_S))
    except (ProviderError, TimeoutError, ValueError) as exc:
        print(f"The model server did not list its models: {_why(exc)}")
        models = []
    for number, model in enumerate(models, 1):
        print(f"  {number}. {model}")
    answer = input("Model (its number or name): ").strip()
    model = (
        models[int(answer) - 1] if answer.isdigit() and 0 < int(answer) <= len(models) else answer
    )
    if not model:
        print("No model chosen: nothing written.")
        return 1
    try:
        checked = make_provider(provider, model=model, base_url=base_url, api_key=api_key)
        said = asyncio.run(asyncio.wait_for(checked.check(), TIMEOUT_S))
    except (ProviderError, TimeoutError, ValueError) as exc:
        print(f"The connection test failed: {_why(exc)}. Nothing written.")
        return 1
    print(said)
    _write(path, {"provider": provider, "base_url": base_url, "model": model, "api_key": api_key})
    print(f"Written to {path}. plan-lsp is set up.")
    return 0


async def _models(provider: str, base_url: str | None, api_key: str | None) -> list[str]:
    from plan_lsp.providers.http_errors import served_models

    sdk = importlib.import_module(provider)
    make = sdk.AsyncOpenAI if provider == "openai" else sdk.AsyncAnthropic
    client = make(api_key=api_key or os.environ.get(f"{provider.upper()}_API_KEY") or "none",
                  base_url=base_url, max_retries=0)  # fmt: skip
    return await served_models(sdk, client, base_url or provider)


def _why(exc: BaseException) -> str:
    return getattr(exc, "message", None) or str(exc) or type(exc).__name__


def _write(path: Path, values: dict[str, Any]) -> None:
    """The set-up's keys at the top of the user config; every other line kept as it was."""
    lines = path.read_text().splitlines() if path.is_file() else []
    tables = next((i for i, line in enumerate(lines) if line.lstrip().startswith("[")), len(lines))
    ours = re.compile(rf"\s*({'|'.join(KEYS)})\s*=")
    kept = [line for line in lines[:tables] if not ours.match(line)]
    new = [f"{key} = {json.dumps(value)}" for key, value in values.items() if value is not None]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds the API key
    os.chmod(path, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("\n".join([*new, *kept, *lines[tables:]]) + "\n")
