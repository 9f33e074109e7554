"""A tool's arguments: the JSON Schema offered to the model, and the check of what it sends.
`model_error` (our pydantic models) and `schema_error` (an MCP tool's schema) word a refusal
alike: the field, what it must be.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError as SchemaViolation

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


class ArgumentModel(BaseModel):
    """Base of a tool's argument model: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of `model` as sent to a model provider: `$ref`s inlined, titles
    dropped, an optional field offered as its non-null type (null is still accepted)."""
    raw = model.model_json_schema()
    defs: dict[str, Any] = raw.pop("$defs", {})
    raw.pop("description", None)
    schema = _clean(raw, defs, ())
    if not isinstance(schema, dict):  # pragma: no cover - a model's schema is an object
        raise TypeError(f"{model.__name__}: not an object schema")
    return schema


def _clean(node: Any, defs: Mapping[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_clean(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in seen:
            raise ValueError(f"recursive argument model {name!r} cannot be inlined")
        target = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
        return _clean(target, defs, (*seen, name))
    any_of = node.get("anyOf")
    if isinstance(any_of, list):
        rest = [b for b in any_of if b != {"type": "null"}]
        if len(rest) == 1 and len(rest) < len(any_of):
            merged = {**rest[0], **{k: v for k, v in node.items() if k not in ("anyOf",)}}
            if merged.get("default", 0) is None:
                del merged["default"]
            return _clean(merged, defs, seen)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _clean(sub, defs, seen) for name, sub in value.items()}
        else:
            out[key] = _clean(value, defs, seen)
    if out.get("type") == "object" and "properties" in out:
        out.setdefault("additionalProperties", False)
    return out


def type_name(value: object) -> str:
    """The JSON type of `value` ("string", "integer", ...)."""
    for name, types in _JSON_TYPES.items():
        if isinstance(value, bool) and name != "boolean":
            continue
        if isinstance(value, types):
            return name
    return type(value).__name__


def field_path(loc: Sequence[str | int]) -> str:
    """('items', 1, 'n') → 'items[1].n'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


_EXPECTED = {
    "string_type": "string",
    "int_type": "integer",
    "int_parsing": "integer",
    "int_from_float": "integer",
    "float_type": "number",
    "float_parsing": "number",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "list_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
}


def model_error(exc: ValidationError, schema: Mapping[str, Any] | None = None) -> str:
    """The first thing wrong with the arguments, naming the field."""
    first = exc.errors(include_url=False)[0]
    loc: Sequence[str | int] = first.get("loc", ())
    where = field_path(loc)
    label = f"'{where}'" if where else "the arguments"
    kind = first.get("type", "")
    ctx: dict[str, Any] = dict(first.get("ctx") or {})
    value = first.get("input")
    if kind == "missing":
        return f"missing required field '{where}'"
    if kind == "extra_forbidden":
        known = _known_fields(schema, loc[:-1]) if schema is not None else []
        return f"unknown field '{where}' (known fields: {', '.join(known) or 'none'})"
    if kind in _EXPECTED:
        return f"{label} must be {_EXPECTED[kind]}, not {type_name(value)}"
    if kind in ("literal_error", "enum"):
        return (
            f"{label} must be one of {ctx.get('expected', '')}, "
            f"not {json.dumps(value, default=str)}"
        )
    if kind == "string_too_short":
        return f"{label} {_least_chars(ctx.get('min_length', 1))}"
    if kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        return f"{label} {words.format(ctx.get(key))}"
    message = str(first.get("msg", "is not valid"))
    message = message.removeprefix("Value error, ")
    return f"{label}: {message}"


# A bound broken, by pydantic error type: (its context key, the words); `{}` is the bound.
_BOUNDS = {
    "string_too_long": ("max_length", "must be at most {} characters"),
    "too_short": ("min_length", "needs at least {} item(s)"),
    "too_long": ("max_length", "allows at most {} items"),
    "greater_than_equal": ("ge", "must be at least {}"),
    "greater_than": ("gt", "must be greater than {}"),
    "less_than_equal": ("le", "must be at most {}"),
    "less_than": ("lt", "must be less than {}"),
}
# The same bounds as JSON Schema keywords.
_SCHEMA_BOUNDS = {
    "maxLength": "string_too_long",
    "minItems": "too_short",
    "maxItems": "too_long",
    "minimum": "greater_than_equal",
    "maximum": "less_than_equal",
}


def _least_chars(least: object) -> str:
    return "must not be empty" if least == 1 else f"must be at least {least} characters"


def _known_fields(schema: Mapping[str, Any], loc: Sequence[str | int]) -> list[str]:
    node: Any = schema
    for part in loc:
        if not isinstance(node, Mapping):
            return []
        node = node.get("items") if isinstance(part, int) else node.get("properties", {}).get(part)
    if not isinstance(node, Mapping):
        return []
    return list(node.get("properties", {}))


# Keywords whose value is a schema, a map of schemas, a list of schemas.
_ONE = {"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then"}
_ONE |= {"else", "unevaluatedItems", "unevaluatedProperties", "additionalItems"}
_MAP = {"properties", "$defs", "definitions", "dependentSchemas", "dependencies"}
_LIST = {"allOf", "anyOf", "oneOf", "prefixItems", "items"}


def _without_regexes(node: Any) -> Any:
    """`node` without `pattern` and `patternProperties` (and the extra-property rule beside
    them): jsonschema matches those with Python's backtracking `re`, and a server's pattern
    must not be able to freeze the server on what the model sends. The server checks them."""
    if not isinstance(node, dict):
        return node
    lenient = "patternProperties" in node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("pattern", "patternProperties") or (
            lenient and key in ("additionalProperties", "unevaluatedProperties")
        ):
            continue
        if key in _MAP and isinstance(value, dict):
            value = {name: _without_regexes(sub) for name, sub in value.items()}
        elif key in _LIST and isinstance(value, list):
            value = [_without_regexes(sub) for sub in value]
        elif key in _ONE:
            value = _without_regexes(value)
        out[key] = value
    return out


def schema_error(value: Any, schema: dict[str, Any]) -> str | None:
    """The first way `value` breaks `schema` (checked by jsonschema, in the draft the schema
    names, 2020-12 by default), naming the field; None when it conforms, or when the schema
    itself is broken (the tool's server judges then). For tools whose schema is given."""
    # Loaded when an MCP tool is first called, not at start-up (jsonschema takes ~50 ms).
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError, best_match
    from jsonschema.validators import validator_for
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    validator = validator_for(schema, default=Draft202012Validator)
    try:
        validator.check_schema(schema)
        # An empty registry: no `$ref` is fetched from the network (the default one would).
        checker = validator(_without_regexes(schema), registry=Registry())
        error = best_match(checker.iter_errors(value))
    except (SchemaError, Unresolvable, RecursionError):
        return None
    return None if error is None else _schema_words(error)


def _schema_words(error: SchemaViolation) -> str:
    where = field_path(list(error.absolute_path))
    label = f"'{where}'" if where else "the arguments"
    keyword = error.validator
    expected: Any = error.validator_value
    value: Any = error.instance
    if keyword == "required":
        missing = next(n for n in expected if n not in value)
        return f"missing required field '{where + '.' if where else ''}{missing}'"
    if keyword == "additionalProperties" and expected is False:
        parent: Any = error.schema
        known = list(parent.get("properties", {}))
        extra = next(n for n in value if n not in known)
        return (
            f"unknown field '{where + '.' if where else ''}{extra}' "
            f"(known fields: {', '.join(known) or 'none'})"
        )
    if keyword == "type":
        options = expected if isinstance(expected, list) else [expected]
        return f"{label} must be {' or '.join(options)}, not {type_name(value)}"
    if keyword == "enum":
        allowed = ", ".join(json.dumps(v) for v in expected)
        return f"{label} must be one of {allowed}, not {json.dumps(value, default=str)}"
    if keyword == "minLength":
        return f"{label} {_least_chars(expected)}"
    if keyword in _SCHEMA_BOUNDS:
        return f"{label} {_BOUNDS[_SCHEMA_BOUNDS[keyword]][1].format(expected)}"
    message = error.message if len(error.message) <= 300 else error.message[:299] + "…"
    return f"{label}: {message}"
