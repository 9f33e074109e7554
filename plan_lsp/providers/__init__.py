"""Model back ends behind one streaming interface (see `providers.base`).

Importing this package imports nothing else: each provider module (and the model SDK behind
it) loads when one of its names is first used, so the server's start-up does not pay for back
ends it may never use.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "AnthropicProvider": "anthropic_provider",
    "OpenAIProvider": "openai_provider",
    "ScriptedProvider": "scripted",
    "TranscriptProvider": "transcript",
    "make_provider": "factory",
    **{
        name: "base"
        for name in (
            "ChatMessage",
            "Finish",
            "ModelRequest",
            "Provider",
            "ProviderError",
            "StreamEvent",
            "TextDelta",
            "ToolCall",
            "ToolCallArgsDelta",
            "ToolCallStart",
            "ToolSpec",
            "Usage",
        )
    },
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'plan_lsp.providers' has no attribute {name!r}")
    return getattr(importlib.import_module(f"plan_lsp.providers.{module}"), name)
