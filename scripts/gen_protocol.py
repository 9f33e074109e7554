"""Generates docs/protocol.md and client-vscode/src/protocol.generated.ts from the wire
contract's models (plan_lsp/protocol/), through their JSON Schema.

    .venv/bin/python scripts/gen_protocol.py          # write both files
    .venv/bin/python scripts/gen_protocol.py --check  # exit 1, with a diff, if either is stale

The output depends on the models only (sorted, no dates), so the check is exact.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from plan_lsp.protocol import errors, methods, params, results, state, updates  # noqa: E402

DOC = ROOT / "docs" / "protocol.md"
TS = ROOT / "client-vscode" / "src" / "protocol.generated.ts"
REF = "#/$defs/"

# Named aliases of literal types (inlined by JSON Schema, named in TypeScript and the docs).
ALIASES: dict[str, Any] = {
    "StopReason": errors.StopReason,
    "ErrorCode": errors.ErrorCode,
    "FixSetting": errors.FixSetting,
    "PermissionAnswer": state.PermissionAnswer,
}


class Contract:
    """Every schema of the contract, with one table of named definitions."""

    def __init__(self) -> None:
        entries: list[tuple[str, Any]] = []
        for m in (*methods.METHODS, *methods.COMMANDS, *methods.CLIENT_REQUESTS):
            entries += [(f"{m.name} params", m.params), (f"{m.name} result", m.result)]
        entries.append(("Update", updates.Update))
        entries += list(ALIASES.items())
        mode: Literal["validation"] = "validation"
        adapters = [(key, mode, TypeAdapter(t)) for key, t in entries]
        top, defs = TypeAdapter.json_schemas(adapters, ref_template=REF + "{model}")
        self.top: dict[str, Any] = {key: schema for (key, _mode), schema in top.items()}
        self.defs: dict[str, Any] = dict(sorted(defs.get("$defs", {}).items()))
        self.classes = _classes()
        self.aliases = {self._alias_key(s): name for name, s in self.top.items() if name in ALIASES}

    @staticmethod
    def _alias_key(schema: dict[str, Any]) -> tuple[str, ...]:
        return tuple(schema.get("enum", ()))

    def type_of(self, schema: dict[str, Any], top: bool = True) -> str:
        """The TypeScript type of a schema (also how the docs spell types)."""
        if "$ref" in schema:
            return str(schema["$ref"]).removeprefix(REF)
        if "discriminator" in schema and schema == self.top["Update"]:
            return "Update"
        for key in ("oneOf", "anyOf"):
            if key in schema:
                parts = [self.type_of(s, False) for s in schema[key]]
                return " | ".join(dict.fromkeys(parts))
        if "const" in schema:
            return _literal(schema["const"])
        if "enum" in schema:
            alias = self.aliases.get(self._alias_key(schema))
            if alias is not None:
                return alias
            return " | ".join(_literal(v) for v in schema["enum"])
        kind = schema.get("type")
        if kind == "array":
            item = self.type_of(schema.get("items", {}), False)
            return f"({item})[]" if " | " in item else f"{item}[]"
        if kind == "object":
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                return f"Record<string, {self.type_of(extra, False)}>"
            return "Record<string, unknown>"
        simple = {"string": "string", "integer": "number", "number": "number",
                  "boolean": "boolean", "null": "null"}  # fmt: skip
        if isinstance(kind, str) and kind in simple:
            return simple[kind]
        return "unknown"

    def always_sent(self, type_name: str) -> set[str]:
        """The fields that are always present. A contract model (`WireModel`) describes a
        JSON object the server builds: a field with a default may be left out. Any other
        model (`SessionState` and its parts, todos, questions) is sent whole, as pydantic
        dumps it: every field is present."""
        schema = self.defs[type_name]
        cls = self.classes.get(type_name)
        if cls is not None and not issubclass(cls, params.WireModel):
            return set(schema.get("properties", {}))
        return set(schema.get("required", []))

    def describe(self, type_name: str, field: str | None = None) -> str:
        """A definition's (or its field's) description: its own, else methods.FIELD_NOTES
        for it or for the class it inherits the field from."""
        schema = self.defs[type_name]
        own = (
            schema.get("description")
            if field is None
            else schema.get("properties", {}).get(field, {}).get("description")
        )
        if own:
            return " ".join(str(own).split())
        cls = self.classes.get(type_name)
        for base in cls.__mro__ if cls is not None else ():
            note = methods.FIELD_NOTES.get(base.__name__ + (f".{field}" if field else ""))
            if note:
                return note
        if field is None or "const" in schema["properties"][field]:
            return ""
        raise SystemExit(f"{type_name}.{field} is described nowhere: add it to FIELD_NOTES")


def _classes() -> dict[str, type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    for module in (params, errors, results, updates, state):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseModel):
                found.setdefault(value.__name__, value)
    return found


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def _ref_name(schema: dict[str, Any] | None) -> str | None:
    if schema is None or "$ref" not in schema:
        return None
    return str(schema["$ref"]).removeprefix(REF)


# -- TypeScript -------------------------------------------------------------------------------


def _ts_comment(text: str, indent: str = "") -> list[str]:
    if not text:
        return []
    text = text.replace("*/", "*\\/")
    return [f"{indent}/** {text} */"]


def typescript(c: Contract) -> str:
    out = [
        "// Generated by scripts/gen_protocol.py from plan_lsp/protocol/; do not edit.",
        "// The planLsp/* wire contract (docs/protocol.md). No imports: the webview bundle uses",
        "// these types too.",
        "/* eslint-disable */",
        "",
    ]
    for name in ALIASES:
        out += [f"export type {name} = {' | '.join(_literal(v) for v in c.top[name]['enum'])};", ""]
    for name, schema in c.defs.items():
        out += _ts_comment(c.describe(name))
        if schema.get("type") == "object" and "properties" in schema:
            props = schema["properties"]
            if not props:
                out += [f"export type {name} = Record<string, never>;", ""]
                continue
            required = c.always_sent(name)
            out.append(f"export interface {name} {{")
            for field, prop in props.items():
                out += _ts_comment(c.describe(name, field), "  ")
                optional = "" if field in required else "?"
                out.append(f"  {field}{optional}: {c.type_of(prop)};")
            out += ["}", ""]
        else:
            out += [f"export type {name} = {c.type_of(schema)};", ""]
    update = c.top["Update"]
    members = [f"  | {c.type_of(s)}" for s in update["oneOf"]]
    members[-1] += ";"
    out += [
        "/** `planLsp/update` params: one of the kinds, told apart by `kind`. */",
        "export type Update =",
        *members,
        "",
        "export type UpdateKind = Update['kind'];",
        "",
        "export const UPDATE_KINDS: readonly UpdateKind[] = [",
        *[f"  {_literal(k)}," for k in sorted(update["discriminator"]["mapping"])],
        "];",
        "",
    ]
    for title, table, direction in (
        ("Client → server requests: params and result.", methods.METHODS, "PlanLspRequests"),
        ("`workspace/executeCommand` commands: argument and result.", methods.COMMANDS,
         "PlanLspCommands"),
        ("Server → client requests: params and result.", methods.CLIENT_REQUESTS,
         "PlanLspClientRequests"),
    ):  # fmt: skip
        out += [f"/** {title} */", f"export interface {direction} {{"]
        for m in table:
            params = c.type_of(c.top[f"{m.name} params"])
            result = c.type_of(c.top[f"{m.name} result"])
            if m.result_nullable:
                result += " | null"
            out.append(f"  '{m.name}': {{ params: {params}; result: {result} }};")
        out += ["}", ""]
    return "\n".join(out)


# -- Markdown ---------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str, in_table: bool = True) -> str:
    return "`" + (_cell(text) if in_table else text) + "`"


def _anchor(name: str) -> str:
    return name.lower()


def _field_table(c: Contract, name: str, skip: tuple[str, ...] = ()) -> list[str]:
    schema = c.defs[name]
    props = {k: v for k, v in schema.get("properties", {}).items() if k not in skip}
    if not props:
        return ["(an empty object)", ""]
    required = c.always_sent(name)
    rows = ["| field | type | presence | description |", "|---|---|---|---|"]
    for field, prop in props.items():
        if field in required:
            presence = "required"
        elif prop.get("default") is not None:
            presence = f"default {_code(_literal(prop['default']))}"
        else:
            presence = "optional"
        rows.append(
            f"| `{field}` | {_code(c.type_of(prop))} | {presence} | "
            f"{_cell(c.describe(name, field))} |"
        )
    return [*rows, ""]


def _type_link(c: Contract, schema: dict[str, Any]) -> str:
    name = _ref_name(schema)
    if name is None:
        return _code(c.type_of(schema), in_table=False)
    return f"[`{name}`](#{_anchor(name)})"


def markdown(c: Contract, update_names: list[str]) -> str:
    out = [
        "# The plan-lsp protocol",
        "",
        "<!-- Generated by scripts/gen_protocol.py from plan_lsp/protocol/; "
        "do not edit. -->",
        "",
        "plan-lsp speaks LSP over JSON-RPC (stdio) and adds the `planLsp/*` requests below,",
        "a few `workspace/executeCommand` commands, the `planLsp/update` notification and three",
        "requests of its own to the client. Every message is described here by its JSON shape,",
        "in TypeScript notation (`T | null`: the value may be `null`). In the tables, a",
        "`required` field is always present, an `optional` one or one with a default may be",
        "absent (the default applies).",
        "The models in `plan_lsp/protocol/` are the contract; this page and",
        "`client-vscode/src/protocol.generated.ts` are generated from them, and",
        "`tests/test_protocol_conformance.py` checks what the real server sends against them.",
        "How the server is built is in [architecture.md](architecture.md), what it protects",
        "and how in [security.md](security.md).",
        "",
        "## Capabilities",
        "",
        "The initialize answer carries `capabilities.experimental.planLsp`:",
        "",
        "| field | description |",
        "|---|---|",
        *[f"| `{k}` | {_cell(v)} |" for k, v in methods.EXPERIMENTAL_SERVER_FIELDS.items()],
        "",
        "A client declares what it handles under `capabilities.experimental.planLsp` in its",
        "`initialize` request (every field optional, false when absent unless said otherwise);",
        "a client that declares nothing gets standard LSP only (`window/logMessage`,",
        "`$/progress`, `window/showMessageRequest`, code lenses and actions):",
        "",
        "| field | description |",
        "|---|---|",
        *[f"| `{k}` | {_cell(v)} |" for k, v in methods.EXPERIMENTAL_CLIENT_OPTIONS.items()],
        "",
        "Errors: invalid params are answered with `InvalidParams` (-32602) naming the field; a",
        "valid request the server refuses (a run in progress, a plan that changed since the",
        "user saw it) with `RequestFailed` (-32803) and the reason.",
        "",
    ]

    def method_section(title: str, table: tuple[methods.Method, ...], intro: str) -> None:
        out.extend([f"## {title}", "", intro, ""])
        for m in table:
            params_name = _ref_name(c.top[f"{m.name} params"])
            result = _type_link(c, c.top[f"{m.name} result"])
            if m.result_nullable:
                result += " or `null`"
            out.extend([f"### `{m.name}`", "", _cell(m.doc), ""])
            if params_name is not None:
                out.append(f"Params [`{params_name}`](#{_anchor(params_name)}) → result {result}.")
            out.append("")

    method_section(
        "Requests (client → server)",
        methods.METHODS,
        "Every request takes an object; `workspaceUri` names the workspace folder (the first "
        "one by default).",
    )
    method_section(
        "Commands (`workspace/executeCommand`)",
        methods.COMMANDS,
        "Code lenses and code actions carry these; the one argument is the params object of "
        "the request of the same name.",
    )
    method_section(
        "Requests (server → client)",
        methods.CLIENT_REQUESTS,
        "Sent only to clients that declared them; a request unanswered within its timeout "
        "counts as a refusal (permission), a dismissal (questions) or not saved.",
    )

    base = c.defs["TextUpdate"]["properties"]
    common = [k for k in base if k not in ("kind", "delta")]
    out += [
        "## `planLsp/update` (server → client notification)",
        "",
        "Sent only to clients that declared `experimental.planLsp` (and not `updates: false`).",
        "Every update has these fields, and `kind` says which of the kinds below it is:",
        "",
        "| field | type | description |",
        "|---|---|---|",
        *[
            f"| `{k}` | {_code(c.type_of(base[k]))} | {_cell(c.describe('TextUpdate', k))} |"
            for k in common
        ],
        "",
    ]
    for name in update_names:
        kind = c.defs[name]["properties"]["kind"]["const"]
        out += [f"### `{kind}`", "", f"<a id=\"{_anchor(name)}\"></a>`{name}`: "
                + _cell(c.describe(name)), ""]  # fmt: skip
        out += _field_table(c, name, skip=("kind", *common))

    out += ["## Types", ""]
    shown = set(update_names)
    for name, schema in c.defs.items():
        if name in shown:
            continue
        out += [f"### {name}", ""]
        text = c.describe(name)
        if text:
            out += [_cell(text), ""]
        if schema.get("type") == "object" and "properties" in schema:
            out += _field_table(c, name)
        else:
            out += [f"{_code(c.type_of(schema), in_table=False)}", ""]
    out += ["### Literal types", ""]
    for alias in ALIASES:
        values = " | ".join(_literal(v) for v in c.top[alias]["enum"])
        out += [f"- `{alias}`: {_code(values, in_table=False)}"]
    out.append("")
    return "\n".join(out)


def render() -> dict[Path, str]:
    c = Contract()
    mapping = c.top["Update"]["discriminator"]["mapping"]
    update_names = [str(ref).removeprefix(REF) for ref in mapping.values()]
    return {DOC: markdown(c, update_names), TS: typescript(c)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail if a file is stale")
    args = parser.parse_args(argv)
    stale = False
    for path, text in render().items():
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        if args.check:
            stale = True
            rel = path.relative_to(ROOT)
            sys.stdout.writelines(
                difflib.unified_diff(
                    old.splitlines(True), text.splitlines(True), f"{rel} (checked in)",
                    f"{rel} (generated)",
                )
            )  # fmt: skip
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("\nstale: run .venv/bin/python scripts/gen_protocol.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
