"""An offline estimate of how many tokens a text or a whole model request takes.

No tokenizer of any model is bundled: the estimate counts the pieces byte-pair tokenizers
make (words, runs of digits, punctuation, line breaks and indentation) and is calibrated at
run time against the counts the provider reports (`agent.context.TokenMeter`). It errs on the
large side for text it cannot read (long words, non-Latin scripts), so a budget built on it
compacts early rather than overrunning the window.
"""

from __future__ import annotations

import json
import math
import re

from plan_lsp.providers.base import ChatMessage, ModelRequest, ToolSpec

# Letters, digits, a line break with the indentation after it, other whitespace, anything else.
_PIECES = re.compile(r"[^\W\d_]+|\d+|\n[ \t]*|[ \t]+|[^\w\s]|_+|\s", re.UNICODE)

# What a chat template adds around each message, and each tool definition.
MESSAGE_OVERHEAD = 4
TOOL_OVERHEAD = 8
REQUEST_OVERHEAD = 3


def _letters(run: str) -> int:
    if not run.isascii():
        # Other scripts: close to one token per character or two.
        return max(1, math.ceil(len(run) / 1.5))
    # Common English words are one token; long identifiers split into pieces.
    return max(1, math.ceil(len(run) / 6))


# Estimates of texts seen before, by (length, hash): a conversation is estimated again before
# every request, and its older messages are the same texts each time. Only numbers are kept.
_SEEN: dict[tuple[int, int], int] = {}
_SEEN_MAX = 16_384
# Texts shorter than this are counted again (cheaper than remembering them).
_SEEN_FROM = 256


def estimate_text(text: str) -> int:
    """Tokens in `text`, estimated."""
    if not text:
        return 0
    if len(text) < _SEEN_FROM:
        return _count(text)
    key = (len(text), hash(text))
    count = _SEEN.get(key)
    if count is None:
        count = _count(text)
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.pop(next(iter(_SEEN)))  # the oldest
        _SEEN[key] = count
    return count


def _count(text: str) -> int:
    count = 0
    for match in _PIECES.finditer(text):
        piece = match.group()
        first = piece[0]
        if first.isalpha():
            count += _letters(piece)
        elif first.isdigit():
            count += math.ceil(len(piece) / 3)
        elif first == "\n":
            count += 1 + len(piece[1:]) // 8
        elif first in " \t":
            # One space is part of the next word's token; indentation runs merge.
            count += 0 if piece == " " else max(1, len(piece) // 4)
        else:
            count += 1
    return count


def estimate_message(message: ChatMessage) -> int:
    count = MESSAGE_OVERHEAD + estimate_text(message.content)
    for call in message.tool_calls:
        count += MESSAGE_OVERHEAD + estimate_text(call.name) + estimate_text(call.arguments)
    return count


def estimate_tools(tools: list[ToolSpec]) -> int:
    return sum(
        TOOL_OVERHEAD
        + estimate_text(tool.name)
        + estimate_text(tool.description)
        + estimate_text(json.dumps(tool.parameters, separators=(",", ":")))
        for tool in tools
    )


def estimate_messages(messages: list[ChatMessage]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_request(request: ModelRequest) -> int:
    """Tokens the request's prompt takes: messages, tool definitions, template overhead."""
    return REQUEST_OVERHEAD + estimate_messages(request.messages) + estimate_tools(request.tools)
