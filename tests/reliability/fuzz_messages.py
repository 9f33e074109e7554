"""Hypothesis strategies for JSON-RPC fuzzing: each `Case` is a run of raw bytes that leaves
the server's frame reader where it started (at the beginning of a header block), together
with the ids of the well-formed requests in it, which must each get a response.

Broken framing is built so that every case is self-delimiting: a body shorter than its
Content-Length is padded with filler bytes that can never complete a JSON value, and bytes
the reader sees as header lines are always ended by a line break, so the next case's frame
is read as a frame."""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from tests.reliability.raw_client import frame, id_key

PERMISSION_MODES = ["ask", "auto_edit", "yolo", "strict"]

# Every planLsp/* request and the fields it knows (beyond `workspaceUri`), with valid values
# where the field has a closed set: valid values are mixed in so that real transitions happen.
APPROVE_FIELDS: dict[str, list[Any] | None] = {
    "permissionMode": ["ask", "auto_edit"],
    "clearContext": [True, False],
    "execute": [True, False],
    "force": [True, False],
}
METHOD_FIELDS: dict[str, dict[str, list[Any] | None]] = {
    "planLsp/state": {},
    "planLsp/setMode": {"mode": ["plan", "build"]},
    "planLsp/toggleMode": {},
    "planLsp/setPermissionMode": {"permissionMode": PERMISSION_MODES},
    "planLsp/prompt": {"text": ["go on", "plan it"]},
    "planLsp/cancel": {"runId": None},
    "planLsp/approvePlan": APPROVE_FIELDS,
    "planLsp/rejectPlan": {"feedback": ["shorter, please", ""]},
    "planLsp/planRevisions": {},
}
COMMAND_FIELDS: dict[str, dict[str, list[Any] | None]] = {
    "planLsp.approvePlan": APPROVE_FIELDS,
    "planLsp.rejectPlan": {"feedback": ["shorter, please", ""]},
    "planLsp.toggleMode": {},
    "planLsp.showPreviousRevision": {},
}
# Methods a fuzzer must not call: they end the session by design.
LIFECYCLE = {"initialize", "initialized", "shutdown", "exit"}
UINTEGER_MAX = 2**31 - 1
_CONTENT_LENGTH = re.compile(rb"Content-Length: \d+\r\n")


@dataclass
class Case:
    """Bytes to write, the ids that must be answered, and how many messages it holds."""

    data: bytes
    expect: list[str] = field(default_factory=list)
    messages: int = 1
    category: str = ""

    def __repr__(self) -> str:
        shown = self.data if len(self.data) <= 300 else self.data[:300] + b"..."
        return f"Case({self.category}, expects {self.expect}, {len(self.data)} bytes: {shown!r})"


@dataclass
class FuzzTargets:
    """What the generated messages may point at: the session's workspace and plan."""

    workspace_uri: str
    plan_uri: str
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1_000_000))


# -- JSON values ----------------------------------------------------------------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
# Object keys never spell "jsonrpc": pygls treats any nested object with that key as a
# message of its own (see test_dropped_requests_are_answered for that case on its own).
_keys = st.text(max_size=12).filter(lambda k: k != "jsonrpc")
json_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_keys, children, max_size=4),
    max_leaves=12,
)


def _uri_values(targets: FuzzTargets) -> st.SearchStrategy[Any]:
    return (
        st.sampled_from(
            [
                targets.workspace_uri,
                targets.workspace_uri + "/",
                targets.workspace_uri + "/../elsewhere",
                "file:///nonexistent/folder",
                "file://",
                "http://example.invalid/x",
                "untitled:Untitled-1",
                "",
            ]
        )
        | json_values
    )


def _field_values(valid: list[Any] | None) -> st.SearchStrategy[Any]:
    if valid:
        return st.sampled_from(valid) | json_values
    return json_values


def _params_for(
    fields: dict[str, list[Any] | None], targets: FuzzTargets
) -> st.SearchStrategy[Any]:
    known = {name: _field_values(valid) for name, valid in fields.items()}
    known["workspaceUri"] = _uri_values(targets)
    as_object = st.fixed_dictionaries({}, optional=known)
    with_extra = st.builds(
        lambda d, extra: {**extra, **d}, as_object, st.dictionaries(_keys, json_values, max_size=2)
    )
    return as_object | with_extra | json_values | st.lists(as_object, min_size=1, max_size=2)


# -- messages -------------------------------------------------------------------------------


def _ids(targets: FuzzTargets) -> st.SearchStrategy[int | str]:
    """Unique ids per session; some as strings (JSON-RPC allows both)."""

    def make(as_text: bool, prefix: str) -> int | str:
        n = next(targets.ids)
        return f"{prefix}{n}" if as_text else n

    return st.builds(make, st.booleans(), st.text(max_size=6))


def _request_case(method: str, params: Any, msg_id: int | str, category: str) -> Case:
    # `params` is always present: requests without it are a known drop, tested on their own
    # (test_dropped_requests_are_answered).
    msg = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
    return Case(frame(msg), [id_key(msg_id)], 1, category)


def custom_requests(targets: FuzzTargets) -> st.SearchStrategy[Case]:
    return st.sampled_from(sorted(METHOD_FIELDS)).flatmap(
        lambda method: st.builds(
            _request_case,
            st.just(method),
            _params_for(METHOD_FIELDS[method], targets),
            _ids(targets),
            st.just("planLsp"),
        )
    )


def command_requests(targets: FuzzTargets) -> st.SearchStrategy[Case]:
    def build(command: str, args: list[Any], msg_id: int | str) -> Case:
        return _request_case(
            "workspace/executeCommand", {"command": command, "arguments": args}, msg_id, "command"
        )

    def arguments(command: str) -> st.SearchStrategy[list[Any]]:
        fields = COMMAND_FIELDS.get(command, {})
        return st.lists(_params_for(fields, targets), max_size=3)

    names = st.sampled_from(sorted(COMMAND_FIELDS)) | st.text(max_size=20)
    return names.flatmap(lambda c: st.builds(build, st.just(c), arguments(c), _ids(targets)))


_method_names = st.text(max_size=40).filter(lambda m: m not in LIFECYCLE and m != "$/cancelRequest")


def unknown_methods(targets: FuzzTargets) -> st.SearchStrategy[Case]:
    def build(method: str, params: Any, msg_id: int | str, as_notification: bool) -> Case:
        if as_notification:
            return Case(
                frame({"jsonrpc": "2.0", "method": method, "params": params}), [], 1, "unknown"
            )
        return _request_case(method, params, msg_id, "unknown")

    prefixed = st.builds(
        lambda p, m: p + m, st.sampled_from(["", "planLsp/", "$/", "textDocument/"]), _method_names
    )
    return st.builds(
        build,
        prefixed.filter(lambda m: m not in METHOD_FIELDS and m not in LIFECYCLE),
        json_values,
        _ids(targets),
        st.booleans(),
    )


def _position() -> st.SearchStrategy[dict[str, int]]:
    coord = st.integers(0, 60) | st.integers(0, UINTEGER_MAX)
    return st.fixed_dictionaries({"line": coord, "character": coord})


def _range() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"start": _position(), "end": _position()})


def document_messages(targets: FuzzTargets) -> st.SearchStrategy[Case]:
    """didChange with out-of-range edits to PLAN.md, then code lenses and actions on it."""
    uris = st.sampled_from([targets.plan_uri, targets.plan_uri + ".other", "file:///no/such.md"])
    change = st.fixed_dictionaries({"text": st.text(max_size=80)}, optional={"range": _range()})

    def did_change(uri: str, version: int, changes: list[dict[str, Any]]) -> Case:
        params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}
        return Case(
            frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": params}),
            [],
            1,
            "didChange",
        )

    def code_lens(uri: str, msg_id: int | str) -> Case:
        return _request_case(
            "textDocument/codeLens", {"textDocument": {"uri": uri}}, msg_id, "lens"
        )

    def code_action(uri: str, rng: dict[str, Any], msg_id: int | str) -> Case:
        params = {"textDocument": {"uri": uri}, "range": rng, "context": {"diagnostics": []}}
        return _request_case("textDocument/codeAction", params, msg_id, "action")

    return (
        st.builds(
            did_change, uris, st.integers(0, UINTEGER_MAX), st.lists(change, min_size=1, max_size=3)
        )
        | st.builds(code_lens, uris, _ids(targets))
        | st.builds(code_action, uris, _range(), _ids(targets))
    )


def _state_request(msg_id: int | str) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "method": "planLsp/state", "params": {}}
    ).encode()


def _not_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return True
    return False


def invalid_json(targets: FuzzTargets) -> st.SearchStrategy[Case]:
    """Correctly framed bodies that are not JSON, or JSON that is not a JSON-RPC message."""
    truncated = st.builds(
        lambda n, cut: _state_request(n)[:cut],
        _ids(targets),
        st.integers(1, 40),
    )
    not_json = (
        st.binary(min_size=1, max_size=200)
        | st.text(min_size=1, max_size=200).map(str.encode)
        | truncated
    ).filter(_not_json)
    not_messages = st.sampled_from(
        [
            b"[]",
            b'[{"jsonrpc": "2.0", "method": "planLsp/state", "id": 1}]',
            b"42",
            b'"planLsp/state"',
            b"null",
            b"{}",
            b'{"jsonrpc": "1.0", "id": 7, "method": "planLsp/state"}',
            b'{"id": 8, "method": "planLsp/state"}',
            b'{"jsonrpc": "2.0"}',
            b'{"jsonrpc": "2.0", "id": 9, "result": null}',
            b'{"jsonrpc": "2.0", "id": "nobody", "error": {"code": 1, "message": "x"}}',
        ]
    )
    return st.builds(lambda body: Case(frame(body), [], 1, "invalid-json"), not_json | not_messages)


_header_line = st.binary(max_size=60).map(
    lambda b: b.replace(b"\r", b"").replace(b"\n", b"") + b"\r\n"
)


def _safe_headers(lines: list[bytes]) -> bytes:
    data = b"".join(lines)
    return b"" if _CONTENT_LENGTH.search(data) else data


def broken_framing(targets: FuzzTargets) -> st.SearchStrategy[Case]:
    body = _state_request

    # Header lines that are not Content-Length, then the blank line: nothing to read.
    garbage = st.builds(
        lambda lines: Case(_safe_headers(lines) + b"\r\n", [], 1, "garbage-headers"),
        st.lists(_header_line, min_size=1, max_size=5),
    )
    # No usable Content-Length: the body is read as one more header line and skipped.
    bad_length = st.sampled_from(
        [
            b"",
            b"Content-Length: abc\r\n",
            b"Content-Length: -5\r\n",
            b"Content-Length:\r\n",
            b"content-length: 40\r\n",
            b"Content-Length: 4 0\r\n",
            b"Content-Length: 0x20\r\n",
            b"Content-Length: 40\n",
            b"Content-Type: application/vscode-jsonrpc\r\n",
            b"Content-Length: 0\r\n",
        ]
    )
    missing = st.builds(
        lambda header, n: Case(header + b"\r\n" + body(n) + b"\r\n", [], 1, "bad-length"),
        bad_length,
        _ids(targets),
    )
    # Content-Length too small: the body is cut, its rest is skipped as a header line.
    short = st.builds(
        lambda n, cut: Case(
            b"Content-Length: %d\r\n\r\n" % min(cut, len(body(n)) - 1) + body(n) + b"\r\n",
            [],
            1,
            "short-length",
        ),
        _ids(targets),
        st.integers(1, 30),
    )
    # Truncated body (Content-Length too large): padded with bytes no JSON value ends in.
    truncated = st.builds(
        lambda n, keep, pad, filler: Case(
            b"Content-Length: %d\r\n\r\n" % (len(body(n)[:keep]) + pad)
            + body(n)[:keep]
            + filler * pad,
            [],
            1,
            "truncated-body",
        ),
        _ids(targets),
        st.integers(0, 30),
        st.integers(1, 4096),
        st.sampled_from([b"x", b"\x00", b"#"]),
    )
    # A valid frame with extra headers around Content-Length must still be read.
    extra_headers = st.builds(
        lambda before, after, n: Case(
            _safe_headers(before)
            + b"Content-Length: %d\r\n" % len(body(n))
            + _safe_headers(after)
            + b"\r\n"
            + body(n),
            [id_key(n)],
            1,
            "extra-headers",
        ),
        st.lists(
            st.sampled_from(
                [b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n", b"X-Trace: 1\r\n"]
            ),
            max_size=2,
        ),
        st.lists(
            st.sampled_from(
                [b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n", b"X-Trace: 1\r\n"]
            ),
            max_size=2,
        ),
        _ids(targets),
    )
    return garbage | missing | short | truncated | extra_headers


def huge_messages(targets: FuzzTargets) -> st.SearchStrategy[Case]:
    """Megabyte strings in params, method names and bodies."""

    def build(kind: str, size: int, ch: str, msg_id: int | str) -> Case:
        s = ch * size
        if kind == "method":
            return _request_case(s, {}, msg_id, "huge")
        if kind == "body":
            return Case(frame(b"{" + s.encode()), [], 1, "huge")
        if kind == "command":
            return _request_case(
                "workspace/executeCommand",
                {"command": "planLsp.rejectPlan", "arguments": [{"feedback": s}]},
                msg_id,
                "huge",
            )
        method, key = {
            "mode": ("planLsp/setMode", "mode"),
            "prompt": ("planLsp/prompt", "text"),
            "uri": ("planLsp/state", "workspaceUri"),
            "runId": ("planLsp/cancel", "runId"),
        }[kind]
        return _request_case(method, {key: s}, msg_id, "huge")

    return st.builds(
        build,
        st.sampled_from(["method", "body", "command", "mode", "prompt", "uri", "runId"]),
        st.integers(1_000_000, 3_000_000),
        st.sampled_from(["x", "é", "\u6f22", '"', "\\"]),
        _ids(targets),
    )


def cases(targets: FuzzTargets) -> st.SearchStrategy[Case]:
    return st.one_of(
        custom_requests(targets),
        custom_requests(targets),
        command_requests(targets),
        unknown_methods(targets),
        document_messages(targets),
        invalid_json(targets),
        broken_framing(targets),
    )


@dataclass
class Batch:
    cases: list[Case]
    # Where the concatenated bytes are cut into separate writes (split reads on the server).
    cuts: list[int]

    @property
    def data(self) -> bytes:
        return b"".join(c.data for c in self.cases)

    def writes(self) -> list[bytes]:
        data = self.data
        points = sorted({min(c, len(data)) for c in self.cuts} | {0, len(data)})
        return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


def batches(targets: FuzzTargets) -> st.SearchStrategy[Batch]:
    """A handful of cases, sometimes with one huge message among them."""
    normal = st.lists(cases(targets), min_size=1, max_size=10)
    with_huge = st.builds(
        lambda a, h: [*a, h], st.lists(cases(targets), max_size=4), huge_messages(targets)
    )
    return st.builds(
        Batch,
        st.sampled_from(range(8)).flatmap(lambda k: with_huge if k == 3 else normal),
        st.lists(st.integers(0, 4000), max_size=4),
    )
