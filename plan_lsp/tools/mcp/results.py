"""From a `tools/call` answer (wire JSON) to an observation the model reads.

Binary content is summarised (kind and size, no base64); `isError` becomes a tool error in
the server's words; the whole is capped like `bash` output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from plan_lsp.tools.base import ToolResult
from plan_lsp.tools.bash import OUTPUT_CAP_CHARS
from plan_lsp.tools.bash_process import cap_text


def _size_of_base64(data: object) -> str:
    if not isinstance(data, str):
        return "unknown size"
    return f"{len(data) * 3 // 4:,} bytes"


def _block_text(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        mime = block.get("mimeType", "unknown type")
        return f"[{kind}: {mime}, {_size_of_base64(block.get('data'))}; not shown]"
    if kind == "resource_link":
        mime = f", {block['mimeType']}" if block.get("mimeType") else ""
        return f"[resource link: {block.get('name', '')} <{block.get('uri', '')}>{mime}]"
    if kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, Mapping):
            return "[resource: (malformed)]"
        uri = resource.get("uri", "")
        if "text" in resource:
            return f"[resource <{uri}>]\n{resource.get('text', '')}"
        mime = resource.get("mimeType", "unknown type")
        return f"[resource <{uri}>: {mime}, {_size_of_base64(resource.get('blob'))}; not shown]"
    return f"[{str(kind)[:40]} content; not shown]"


def _structured_text(structured: Any, texts: list[str]) -> str | None:
    """The structured content as JSON, unless a text block already carries the same value."""
    for text in texts:
        try:
            if json.loads(text) == structured:
                return None
        except ValueError:
            continue
    return json.dumps(structured, ensure_ascii=False, indent=2, default=str)


def observation(qualified: str, result: Mapping[str, Any]) -> ToolResult:
    """The observation for one `tools/call` result (wire keys: content, structuredContent,
    isError)."""
    raw = result.get("content")
    blocks = [b for b in raw if isinstance(b, Mapping)] if isinstance(raw, list) else []
    parts = [_block_text(b) for b in blocks]
    texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
    structured = result.get("structuredContent")
    if structured is not None:
        extra = _structured_text(structured, texts)
        if extra is not None:
            parts.append(extra)
    text, truncated = cap_text("\n".join(p for p in parts if p) or "(no content)", OUTPUT_CAP_CHARS)
    if result.get("isError") is True:
        return ToolResult.error("tool_error", text, tool=qualified, truncated=truncated)
    return ToolResult(content=text, data={"tool": qualified, "truncated": truncated})
