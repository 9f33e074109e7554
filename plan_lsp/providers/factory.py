"""Build a provider by name from configuration (`--provider`, `--model`, ...)."""

from __future__ import annotations

import os
from pathlib import Path

from plan_lsp.providers.anthropic_provider import AnthropicProvider
from plan_lsp.providers.base import Provider, ProviderError
from plan_lsp.providers.defaults import DEFAULT_MODELS, PROVIDER_NAMES
from plan_lsp.providers.http_errors import DEFAULT_TIMEOUT_S
from plan_lsp.providers.openai_provider import OpenAIProvider
from plan_lsp.providers.shaping import ChatRoles
from plan_lsp.providers.transcript import TranscriptProvider


def make_provider(
    name: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    script: Path | str | None = None,
    transcript: Path | str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    timeout: float | None = None,
    chat_roles: ChatRoles = "auto",
    context_window: int | None = None,
) -> Provider:
    """A provider for `name`, wrapped in a TranscriptProvider when `transcript` is given.

    Raises ProviderError("config") for an unknown name, a missing or bad script, or an
    unwritable transcript. `chat_roles` and `context_window` (the user's setting, checked
    against the server's by the connection test) concern OpenAI-compatible servers. API keys
    fall back to OPENAI_API_KEY / ANTHROPIC_API_KEY.
    """
    provider: Provider
    if name == "scripted":
        if script is None:
            raise ProviderError("config", "the scripted provider needs a script file (--script)")
        # Its pydantic script models take 10-50 ms to build: only for a scripted session.
        from plan_lsp.providers.scripted import ScriptedProvider

        provider = ScriptedProvider(Path(script))
    elif name == "openai":
        provider = OpenAIProvider(
            model or DEFAULT_MODELS["openai"],
            base_url=base_url,
            api_key=api_key or os.environ.get("OPENAI_API_KEY"),
            temperature=temperature,
            max_tokens=max_tokens,
            timeout=timeout if timeout is not None else DEFAULT_TIMEOUT_S,
            chat_roles=chat_roles,
            configured_window=context_window,
        )
    elif name == "anthropic":
        provider = AnthropicProvider(
            model or DEFAULT_MODELS["anthropic"],
            base_url=base_url,
            api_key=api_key or os.environ.get("ANTHROPIC_API_KEY"),
            temperature=temperature,
            max_tokens=max_tokens,
            timeout=timeout if timeout is not None else DEFAULT_TIMEOUT_S,
        )
    else:
        known = ", ".join(PROVIDER_NAMES)
        raise ProviderError("config", f"unknown provider {name!r} (known: {known})")
    if transcript is not None:
        provider = TranscriptProvider(provider, Path(transcript))
    return provider
