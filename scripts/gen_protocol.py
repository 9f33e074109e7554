"""Generates docs/protocol.md and client-vscode/src/protocol.generated.ts from the wire
contract's models (plan_lsp/protocol/), through their JSON Schema.

    .venv/bin/python scripts/gen_protocol.py          # write both files
    .venv/bin/python scripts/gen_protocol.py --check  # exit 1, with a diff, if either is stale

The output depends on the models only (sorted, no dates), so the check is exact.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import subprocess
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


TABLES = (
    ("Client → server requests: params and result.", methods.METHODS, "PlanLspRequests"),
    ("`workspace/executeCommand` commands: argument and result.", methods.COMMANDS,
     "PlanLspCommands"),
    ("Server → client requests: params and result.", methods.CLIENT_REQUESTS,
     "PlanLspClientRequests"),
)  # fmt: skip


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


# -- TypeScript (json-schema-to-typescript, the extension's dev dependency) -----------------

JSON2TS = ROOT / "client-vscode" / "node_modules" / ".bin" / "json2ts"
TS_BANNER = """// Generated by scripts/gen_protocol.py from plan_lsp/protocol/ (its JSON Schema,
// through json-schema-to-typescript); do not edit. The planLsp/* wire contract
// (docs/protocol.md).
// No imports: the webview bundle uses these types too.
/* eslint-disable */"""


def ts_schema(c: Contract) -> dict[str, Any]:
    """The contract as one JSON Schema for json2ts: every definition described (FIELD_NOTES
    where a model has no description), fields always sent marked required, the literal
    aliases named, and the method tables as objects keyed by method name."""
    update = c.top["Update"]

    def clean(node: Any, owner: str | None = None) -> Any:
        if isinstance(node, list):
            return [clean(v) for v in node]
        if not isinstance(node, dict):
            return node
        if node == update:
            return {"$ref": REF + "Update"}
        if "$ref" in node:  # json2ts would name a described reference as a type of its own
            return {"$ref": node["$ref"]}
        alias = c.aliases.get(c._alias_key(node)) if "enum" in node else None
        if alias is not None:
            return {"$ref": REF + alias}
        out = {k: clean(v) for k, v in node.items() if k not in ("title", "default")}
        if "properties" in node:  # field names, not keywords: a field may be called `title`
            out["properties"] = {f: clean(v) for f, v in node["properties"].items()}
        if owner is not None and "properties" in node:
            out["required"] = sorted(c.always_sent(owner))
            for field, prop in out["properties"].items():
                if c.describe(owner, field) and "$ref" not in prop:
                    prop["description"] = c.describe(owner, field)
        if owner is not None and c.describe(owner):
            out["description"] = c.describe(owner)
        return out

    defs = {name: {**clean(schema, name), "title": name} for name, schema in c.defs.items()}
    for name in ALIASES:
        defs[name] = {"title": name, "type": "string", "enum": c.top[name]["enum"]}
    for title, table, name in TABLES:
        rows = {
            m.name: {
                "type": "object",
                "properties": {
                    "params": clean(c.top[f"{m.name} params"]),
                    "result": {"anyOf": [clean(c.top[f"{m.name} result"]), {"type": "null"}]}
                    if m.result_nullable
                    else clean(c.top[f"{m.name} result"]),
                },
                "required": ["params", "result"],
            }
            for m in table
        }
        defs[name] = {"title": name, "description": title, "type": "object",
                      "properties": rows, "required": list(rows)}  # fmt: skip
    defs["Update"] = {
        "title": "Update",
        "description": "`planLsp/update` params: one of the kinds, told apart by `kind`.",
        "oneOf": update["oneOf"],
    }
    # The root: json2ts declares the definitions nothing references only beside an object.
    root = {**defs.pop("PlanLspRequests"), "definitions": defs}
    return dict(json.loads(json.dumps(root).replace(f'"{REF}', '"#/definitions/')))


def typescript(c: Contract) -> str:
    if not JSON2TS.exists():
        raise SystemExit(f"{JSON2TS} is missing: run `npm ci` in client-vscode/")
    options = ["--unreachableDefinitions", "--no-additionalProperties", "--unknownAny",
               "--style.singleQuote", "--style.printWidth=100",
               f"--bannerComment={TS_BANNER}"]  # fmt: skip
    made = subprocess.run(
        [str(JSON2TS), *options], input=json.dumps(ts_schema(c)), capture_output=True,
        text=True, check=True, cwd=ROOT / "client-vscode",
    )  # fmt: skip
    kinds = sorted(c.top["Update"]["discriminator"]["mapping"])
    # Drop json2ts's note on each definition that it was declared as a definition.
    note = r"(\n \*)?\n \* This interface was referenced by .*\n \* via the .*"
    out = re.sub(r"/\*\*\n \*/\n", "", re.sub(note, "", made.stdout))
    return out + "\n".join([
        "",
        "export type UpdateKind = Update['kind'];",
        "",
        f"export const UPDATE_KINDS: readonly UpdateKind[] = {json.dumps(kinds)};",
        "",
    ])  # fmt: skip


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
