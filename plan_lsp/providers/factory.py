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
    """A provider for `name`, wrapped in a TranscriptProvider when `transcript` is given;
    ProviderError("config") for an unknown name, a bad script or an unwritable transcript.
    API keys fall back to OPENAI_API_KEY / ANTHROPIC_API_KEY."""
    provider: Provider
    if name == "scripted":
        if script is None:
            raise ProviderError("config", "the scripted provider needs a script file (--script)")
        # Its pydantic script models take 10-50 ms to build: only for a scripted session.
        from plan_lsp.providers.scripted import ScriptedProvider

        provider = ScriptedProvider(Path(script))
    elif name in ("openai", "anthropic"):
        key = api_key or os.environ.get(f"{name.upper()}_API_KEY")
        timeout = timeout if timeout is not None else DEFAULT_TIMEOUT_S
        sdk = (model or DEFAULT_MODELS[name], base_url, key, temperature, max_tokens, timeout)
        if name == "openai":
            provider = OpenAIProvider(*sdk, chat_roles=chat_roles, configured_window=context_window)
        else:
            provider = AnthropicProvider(*sdk)
    else:
        known = ", ".join(PROVIDER_NAMES)
        raise ProviderError("config", f"unknown provider {name!r} (known: {known})")
    if transcript is not None:
        provider = TranscriptProvider(provider, Path(transcript))
    return provider
