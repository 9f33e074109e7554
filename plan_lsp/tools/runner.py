"""The tool runner: the one path from a model's tool call to a tool implementation.

Order: unknown tool → argument JSON → argument schema → execution gate (which may ask the
user) → the implementation, under the tool's timeout. Whatever an implementation raises
becomes an error observation: the server never dies from a tool.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from typing import Any, Protocol

from plan_lsp.policy.execution import GateDecision
from plan_lsp.policy.modes import WorkMode
from plan_lsp.policy.safety import ToolDefinition
from plan_lsp.tools.base import ToolContext, ToolResult
from plan_lsp.tools.edit import MODE_PROVIDER_KEY
from plan_lsp.tools.registry import ToolRegistry

log = logging.getLogger(__name__)


class Gate(Protocol):
    async def check(
        self,
        definition: ToolDefinition,
        arguments: dict[str, Any],
        run_id: str,
        allow_names: frozenset[str] | None,
    ) -> GateDecision: ...

    def current_mode(self) -> WorkMode: ...


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _type_name(value: object) -> str:
    for name, types in _JSON_TYPES.items():
        if isinstance(value, bool) and name != "boolean":
            continue
        if isinstance(value, types):
            return name
    return type(value).__name__


def _has_type(value: object, expected: str) -> bool:
    if isinstance(value, bool) and expected in ("integer", "number"):
        return False
    if expected == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _JSON_TYPES.get(expected, (object,)))


def schema_error(value: Any, schema: dict[str, Any], where: str = "") -> str | None:
    """The first way `value` breaks `schema` (the JSON-schema subset tools use), naming the
    field; None when it conforms."""
    label = f"'{where}'" if where else "the arguments"
    expected = schema.get("type")
    if expected is not None:
        options = expected if isinstance(expected, list) else [expected]
        if not any(_has_type(value, t) for t in options):
            return f"{label} must be {' or '.join(options)}, not {_type_name(value)}"
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(v) for v in schema["enum"])
        return f"{label} must be one of {allowed}, not {json.dumps(value, default=str)}"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return (
                f"{label} must not be empty"
                if schema["minLength"] == 1
                else (f"{label} must be at least {schema['minLength']} characters")
            )
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{label} must be at most {schema['maxLength']} characters"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{label} must be at least {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{label} must be at most {schema['maximum']}"
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return f"{label} needs at least {schema['minItems']} item(s)"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{label} allows at most {schema['maxItems']} items"
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                error = schema_error(item, items, f"{where or 'arguments'}[{index}]")
                if error is not None:
                    return error
    if isinstance(value, dict):
        properties: dict[str, Any] = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                return f"missing required field '{_join(where, name)}'"
        for name, item in value.items():
            if name in properties:
                error = schema_error(item, properties[name], _join(where, name))
                if error is not None:
                    return error
            elif schema.get("additionalProperties") is False:
                known = ", ".join(properties) or "none"
                return f"unknown field '{_join(where, name)}' (known fields: {known})"
            elif isinstance(schema.get("additionalProperties"), dict):
                error = schema_error(item, schema["additionalProperties"], _join(where, name))
                if error is not None:
                    return error
    return None


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _observation(payload: dict[str, Any]) -> ToolResult:
    return ToolResult(content=json.dumps(payload, ensure_ascii=False), is_error=True, data=payload)


class ToolRunner:
    def __init__(self, registry: ToolRegistry, gate: Gate) -> None:
        self.registry = registry
        self.gate = gate

    async def call(
        self,
        name: str,
        raw_arguments: str,
        ctx: ToolContext,
        allow_names: frozenset[str] | None = None,
    ) -> ToolResult:
        tool = self.registry.get(name)
        if tool is None:
            return ToolResult.error("unknown_tool", f"there is no tool named {name!r}", tool=name)
        try:
            arguments = json.loads(raw_arguments) if raw_arguments.strip() else {}
        except (json.JSONDecodeError, ValueError) as exc:
            return ToolResult.error(
                "invalid_arguments", f"the arguments of {name} are not valid JSON: {exc}", tool=name
            )
        if not isinstance(arguments, dict):
            return ToolResult.error(
                "invalid_arguments", f"the arguments of {name} must be a JSON object", tool=name
            )
        error = schema_error(arguments, tool.definition.input_schema)
        if error is not None:
            return ToolResult.error("invalid_arguments", f"{name}: {error}", tool=name)

        try:
            decision = await self.gate.check(tool.definition, arguments, ctx.run_id, allow_names)
        except asyncio.CancelledError:
            raise
        except Exception:  # a broken check refuses: the gate fails closed
            log.exception("execution gate failed for %s", name)
            return _observation(
                {"error": "tool_not_allowed", "tool": name, "reason": "the permission check failed"}
            )
        if not decision.allowed:
            return _observation(
                decision.observation
                or {"error": "tool_not_allowed", "tool": name, "reason": decision.reason}
            )

        call_ctx = dataclasses.replace(
            ctx,
            sandbox_shell=decision.sandbox,
            extra={**ctx.extra, MODE_PROVIDER_KEY: self.gate.current_mode},
        )
        timeout = tool.definition.timeout_s
        try:
            result = await asyncio.wait_for(tool.run(arguments, call_ctx), timeout=timeout)
        except TimeoutError:
            return ToolResult.error(
                "timeout", f"{name} did not finish within {timeout:g} s", tool=name
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("tool %s failed", name)
            return ToolResult.error(
                "tool_failed", f"{name} failed: {type(exc).__name__}: {exc}", tool=name
            )
        if not isinstance(result, ToolResult):
            return ToolResult.error("tool_failed", f"{name} returned no result", tool=name)
        return result
