"""Model back ends behind one streaming interface (see `providers.base`).

Importing this package never imports a model SDK: `openai` and `anthropic` are loaded
when such a provider is built.
"""

from plan_lsp.providers.anthropic_provider import AnthropicProvider
from plan_lsp.providers.base import (
    ChatMessage,
    Finish,
    ModelRequest,
    Provider,
    ProviderError,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallStart,
    ToolSpec,
    Usage,
)
from plan_lsp.providers.factory import make_provider
from plan_lsp.providers.openai_provider import OpenAIProvider
from plan_lsp.providers.scripted import ScriptedProvider
from plan_lsp.providers.transcript import TranscriptProvider

__all__ = [
    "AnthropicProvider",
    "ChatMessage",
    "Finish",
    "ModelRequest",
    "OpenAIProvider",
    "Provider",
    "ProviderError",
    "ScriptedProvider",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolCallArgsDelta",
    "ToolCallStart",
    "ToolSpec",
    "TranscriptProvider",
    "Usage",
    "make_provider",
]
