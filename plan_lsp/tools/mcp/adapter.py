"""From an MCP server's tool listing to our tool definitions: names and safety labels.

Names are `mcp__<server>__<tool>`, fitted to `^[a-zA-Z0-9_-]{1,64}$`; a clash is refused,
never merged. Safety is `read_only` only when the user listed the tool, or trusts the
server's hints and they say read-only, not destructive, not open-world (absent hints take
MCP's defaults); else `side_effect`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from plan_lsp.policy.safety import Safety, ToolDefinition
from plan_lsp.tools.mcp.config import McpServerConfig

PREFIX = "mcp__"
SEPARATOR = "__"
MAX_NAME = 64
_UNSAFE_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
# A server describes its own tools; what it may put in front of the model is bounded.
MAX_DESCRIPTION_CHARS = 4000
MAX_SCHEMA_CHARS = 50_000
# Extra time the runner gives a call beyond the server's own timeout, so the MCP timeout
# (with its clearer message) reports first.
TIMEOUT_GRACE_S = 5.0


@dataclass(frozen=True)
class ListedTool:
    """One entry of a server's `tools/list`, in wire terms."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)
    # Wire keys: readOnlyHint, destructiveHint, idempotentHint, openWorldHint.
    annotations: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class AdaptedTool:
    server: str
    mcp_name: str
    definition: ToolDefinition


def qualified_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`; characters providers refuse become `_`, and a name past 64
    characters keeps a short hash of the original so it stays distinct."""
    safe_tool = _UNSAFE_CHARS.sub("_", tool)
    name = f"{PREFIX}{server}{SEPARATOR}{safe_tool}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(tool.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    keep = MAX_NAME - len(PREFIX) - len(server) - len(SEPARATOR) - len(digest) - 1
    return f"{PREFIX}{server}{SEPARATOR}{safe_tool[:keep]}-{digest}"


def _hint(annotations: Mapping[str, Any] | None, key: str, default: bool) -> bool:
    value = (annotations or {}).get(key)
    return value if isinstance(value, bool) else default


def decide_safety(
    server: McpServerConfig, tool: str, annotations: Mapping[str, Any] | None
) -> Safety:
    """The safety label of one MCP tool: read-only when the user listed it, or trusts the
    server's hints and they prove it (read-only, not destructive, not open-world)."""
    if tool in server.read_only_tools:
        return Safety.READ_ONLY
    proven = (
        server.trust_read_only_hint
        and _hint(annotations, "readOnlyHint", False)
        and not _hint(annotations, "destructiveHint", True)
        and not _hint(annotations, "openWorldHint", True)
    )
    return Safety.READ_ONLY if proven else Safety.SIDE_EFFECT


def _input_schema(schema: Mapping[str, Any]) -> dict[str, Any] | str:
    """The schema sent to the model, or why the tool cannot be offered."""
    out = dict(schema)
    if "type" not in out:
        out["type"] = "object"
    if out["type"] != "object":
        return f"its input schema is of type {str(out['type'])[:40]!r}, not an object"
    try:
        size = len(json.dumps(out))
    except (TypeError, ValueError):
        return "its input schema is not JSON"
    if size > MAX_SCHEMA_CHARS:
        return f"its input schema is {size:,} characters long (at most {MAX_SCHEMA_CHARS:,})"
    return out


def _description(server: str, text: str) -> str:
    text = " ".join(text.split())
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 1] + "…"
    return f"[MCP server '{server}'] {text}" if text else f"[MCP server '{server}']"


def adapt_tools(
    server: McpServerConfig, listed: list[ListedTool]
) -> tuple[list[AdaptedTool], list[str]]:
    """Definitions for a server's tools, and a warning per tool that cannot be offered."""
    adapted: list[AdaptedTool] = []
    warnings: list[str] = []
    taken: dict[str, str] = {}
    for tool in listed:
        label = f"MCP server '{server.name}': tool {tool.name[:80]!r}"
        if not tool.name:
            warnings.append(f"MCP server '{server.name}': a tool without a name was ignored")
            continue
        name = qualified_name(server.name, tool.name)
        if name in taken:
            warnings.append(
                f"{label} and {taken[name][:80]!r} both become {name}; "
                f"{tool.name[:80]!r} is not offered"
            )
            continue
        schema = _input_schema(tool.input_schema)
        if isinstance(schema, str):
            warnings.append(f"{label} is not offered: {schema}")
            continue
        taken[name] = tool.name
        definition = ToolDefinition(
            name=name,
            description=_description(server.name, tool.description),
            input_schema=schema,
            safety=decide_safety(server, tool.name, tool.annotations),
            timeout_s=server.timeout_s + TIMEOUT_GRACE_S,
        )
        adapted.append(AdaptedTool(server.name, tool.name, definition))
    listed_names = {t.name for t in listed}
    for wanted in server.read_only_tools:
        if wanted not in listed_names:
            warnings.append(
                f"MCP server '{server.name}': read_only_tools names {wanted[:80]!r}, "
                "which the server does not list"
            )
    return adapted, warnings
