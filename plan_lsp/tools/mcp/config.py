"""MCP server settings: `[[mcp.servers]]` in the user config, or `mcp.servers` in
`initializationOptions` (camelCase keys accepted there).

A workspace's own config can never add a server (starting one runs a program). A bad entry
is kept as a problem (a failed server with the reason); the others are used.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

# Server names become part of tool names (`mcp__<server>__<tool>`): letters, digits, `-`
# and single `_`, not ending in `_`, so the first `__` after `mcp__` always ends the server.
SERVER_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]|_(?=[A-Za-z0-9-]))*")
MAX_SERVER_NAME = 24
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_MAX_MESSAGE_BYTES = 8 << 20


class McpServerConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, validate_by_name=True
    )

    name: str
    # argv; the first word is the program. Runs with the workspace folder as cwd.
    command: list[str] = Field(min_length=1)
    # Added to the environment the server starts with (which never holds the model's keys).
    env: dict[str, str] = Field(default_factory=dict)
    # MCP tool names (as the server lists them) that may run in plan mode.
    read_only_tools: list[str] = Field(default_factory=list)
    # Believe the server's own annotations (readOnlyHint and no destructive/open-world hint).
    trust_read_only_hint: bool = False
    # A tool call that has not answered by then is abandoned with a timeout error.
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    # Starting the server and listing its tools must finish within this.
    startup_timeout_s: float = Field(default=30.0, gt=0, le=600)
    # The largest message (one line of JSON-RPC) read from the server, in bytes; a longer
    # answer becomes a tool error naming its size, unread (tools/mcp/capped_stdout.py).
    max_message_bytes: int = Field(default=DEFAULT_MAX_MESSAGE_BYTES, ge=65536, le=256 << 20)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if len(value) > MAX_SERVER_NAME or SERVER_NAME.fullmatch(value) is None:
            raise ValueError(
                f"server name {value[:40]!r} must be 1-{MAX_SERVER_NAME} letters, digits, '-' "
                "or single '_', start with a letter or digit and not end with '_'"
            )
        return value

    @field_validator("command")
    @classmethod
    def _command(cls, value: list[str]) -> list[str]:
        if not value[0].strip():
            raise ValueError("the program (first word of command) must not be empty")
        if any("\x00" in word for word in value):
            raise ValueError("command words must not contain NUL characters")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for key, item in value.items():
            if _ENV_NAME.fullmatch(key) is None:
                raise ValueError(f"environment variable name {key[:40]!r} is not valid")
            if "\x00" in item:
                raise ValueError(f"environment variable {key} must not contain NUL characters")
        return value


class McpConfigProblem(BaseModel):
    """A server entry that could not be used, and why (shown as a failed server)."""

    model_config = ConfigDict(frozen=True)

    name: str
    error: str


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


class McpSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    servers: list[McpServerConfig] = Field(default_factory=list)
    # Entries that were rejected; filled by validation, not by users.
    invalid: list[McpConfigProblem] = Field(default_factory=list)
    # MCP servers an ACP client passes (`session/new`), by name: the tools that may run in
    # plan mode (the servers' own hints are never believed).
    client_read_only_tools: dict[str, list[str]] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _split_valid_entries(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "servers" not in data:
            return data
        raw = data["servers"]
        if not isinstance(raw, list):
            return data  # reported by field validation as "must be a list"
        servers: list[McpServerConfig] = []
        invalid: list[McpConfigProblem] = []
        seen: set[str] = set()
        for index, entry in enumerate(raw):
            label = entry.get("name") if isinstance(entry, dict) else None
            name = label if isinstance(label, str) and label else f"servers[{index}]"
            try:
                server = McpServerConfig.model_validate(entry)
            except ValidationError as exc:
                invalid.append(McpConfigProblem(name=name, error=_first_error(exc)))
                continue
            if server.name in seen:
                invalid.append(
                    McpConfigProblem(name=name, error="another server already has this name")
                )
                continue
            seen.add(server.name)
            servers.append(server)
        return {**data, "servers": servers, "invalid": invalid}

    @property
    def configured(self) -> bool:
        return bool(self.servers or self.invalid)
