"""Provider names and default models: what the configuration and the session state need
without loading a provider."""

from __future__ import annotations

PROVIDER_NAMES = ("scripted", "openai", "anthropic")
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}
