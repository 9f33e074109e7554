"""An edit's permission request carries the file's text before and the exact text after,
computed by the tool's own code: allowed, the tool writes exactly that after-text."""

from __future__ import annotations

import asyncio
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from plan_lsp.policy.execution import ExecutionGate
from plan_lsp.policy.permissions import PermissionEngine
from plan_lsp.policy.ports import MAX_CHANGE_BYTES, FileChange, FileEdit, PermissionRequest
from plan_lsp.protocol.state import PermissionAnswer, PermissionMode, Question, WorkMode
from plan_lsp.session import Actor, Session, StateStore
from plan_lsp.tools.base import ToolContext, ToolResult
from plan_lsp.tools.registry import builtin_registry
from plan_lsp.tools.runner import ToolRunner


@dataclass
class World:
    """A workspace in build mode, permission mode `ask`: every edit asks, and is allowed."""

    ws: Path
    buffers: dict[Path, str] = field(default_factory=dict)
    requests: list[PermissionRequest] = field(default_factory=list)
    # Runs while the prompt is open (the user typing in the file meanwhile).
    during_prompt: Any = None

    def __post_init__(self) -> None:
        self.session = Session(StateStore(self.ws / "state.db"), self.ws, self.ws / "plans")
        self.session.set_mode(WorkMode.BUILD, Actor.USER)
        self.session.set_permission_mode(PermissionMode.ASK, Actor.USER)
        gate = ExecutionGate(self.session, PermissionEngine(workspace_roots=[self.ws]), self)
        self.runner = ToolRunner(builtin_registry(), gate)

    async def request_permission(self, request: PermissionRequest) -> PermissionAnswer:
        self.requests.append(request)
        if self.during_prompt is not None:
            self.during_prompt()
        return "allow_once"

    async def ask_questions(self, run_id: str, questions: list[Question]) -> None:
        return None

    def open_document_text(self, path: Path) -> str | None:
        return self.buffers.get(Path(path))

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        self.buffers[Path(edit.path)] = edit.new_text
        return True

    async def call(self, tool: str, arguments: str) -> ToolResult:
        ctx = ToolContext(
            workspace_roots=[self.ws],
            plans_dir=self.ws / "plans",
            run_id="run",
            editor=self,
            user=self,
            emit=lambda kind, payload: None,
        )
        return await self.runner.call(tool, arguments, ctx)

    def seen(self, path: Path) -> str | None:
        """What the user sees of `path`: the open buffer, else the disk."""
        if path in self.buffers:
            return self.buffers[path]
        return path.read_bytes().decode() if path.exists() else None


def _in_world(test: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        world = World(Path(tmp).resolve())
        try:
            asyncio.run(test(world))
        finally:
            world.session.store.close()


# -- file texts that have tripped previews up -------------------------------------------------

_PIECES = st.sampled_from(["a", "b", "ab", "aa", " ", "\t", "é", "日本", "🙂", "x = 1", "{", "}"])
_LINE = st.lists(_PIECES, max_size=4).map("".join)


@st.composite
def file_texts(draw: st.DrawFn) -> str:
    lines = draw(st.lists(_LINE, max_size=8))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    text = ending.join(lines)
    if lines and draw(st.booleans()):
        text += ending  # a final line break, or none
    return text


@st.composite
def edits(draw: st.DrawFn, text: str) -> tuple[str, str]:
    """(old_text, new_text): a piece of the file as it is, or as the model saw it (LF where
    the file has CRLF), or a short string that may occur several times, overlapping, or never."""
    kind = draw(st.sampled_from(["slice", "slice_lf", "short"]))
    if kind == "short" or not text:
        old = draw(st.sampled_from(["a", "aa", "aaa", "ab", "\n", "\r\n", "é", "🙂", "zz"]))
    else:
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start + 1, len(text)))
        old = text[start:end]
        if kind == "slice_lf":
            old = old.replace("\r\n", "\n")
    new = draw(st.lists(st.sampled_from(["", "c", "\n", "é", "aa", "🙂"]), max_size=3).map("".join))
    return old, new


@given(data=st.data(), text=file_texts(), open_buffer=st.booleans())
def test_the_requests_after_text_is_what_edit_file_writes(
    data: st.DataObject, text: str, open_buffer: bool
) -> None:
    old, new = data.draw(edits(text))

    async def run(world: World) -> None:
        path = world.ws / "f.txt"
        path.write_bytes(text.encode())
        if open_buffer:
            world.buffers[path] = text
        args = json.dumps({"path": "f.txt", "old_text": old, "new_text": new})
        result = await world.call("edit_file", args)
        assert len(world.requests) == 1
        change = world.requests[0].change
        event("refused" if change is None else "written")
        if change is None:
            # The tool's own code found the call cannot work: it fails, nothing changes.
            assert result.is_error, result.content
            assert world.seen(path) == text
            return
        assert not result.is_error, result.content
        assert change.path == path
        assert change.before == text
        if "\r\n" in text and "\r\n" not in old and "\n" in old:
            event("written: LF old_text in a CRLF file")
        assert world.seen(path) == change.after
        if not open_buffer:
            assert path.read_bytes() == change.after.encode()

    _in_world(run)


@given(before=st.one_of(st.none(), file_texts()), content=file_texts(), open_buffer=st.booleans())
def test_the_requests_after_text_is_what_write_file_writes(
    before: str | None, content: str, open_buffer: bool
) -> None:
    async def run(world: World) -> None:
        path = world.ws / "sub" / "g.txt"
        if before is not None:
            path.parent.mkdir()
            path.write_bytes(before.encode())
            if open_buffer:
                world.buffers[path] = before
        result = await world.call(
            "write_file", json.dumps({"path": "sub/g.txt", "content": content})
        )
        assert not result.is_error, result.content
        (request,) = world.requests
        assert request.change == FileChange(path=path, before=before, after=content)
        assert world.seen(path) == content

    _in_world(run)


def test_the_before_text_is_the_open_buffer_not_the_disk() -> None:
    async def run(world: World) -> None:
        path = world.ws / "h.py"
        path.write_text("print('disk')\n")
        world.buffers[path] = "print('buffer')\n"
        args = '{"path": "h.py", "old_text": "buffer", "new_text": "edited"}'
        result = await world.call("edit_file", args)
        assert not result.is_error, result.content
        (request,) = world.requests
        assert request.change is not None
        assert request.change.before == "print('buffer')\n"
        assert request.change.after == "print('edited')\n"
        assert world.buffers[path] == "print('edited')\n"

    _in_world(run)


def test_the_allowed_change_is_written_even_if_the_text_changed_meanwhile_elsewhere() -> None:
    """The user typed on another line while asked: the allowed change is replayed onto their
    text (not computed again); where the two meet, nothing is written."""

    async def run(world: World) -> None:
        path = world.ws / "m.txt"
        path.write_text("one\ntwo\nthree\nfour\n")

        def type_elsewhere() -> None:
            path.write_text("one\ntwo\nthree\nFOUR\n")

        world.during_prompt = type_elsewhere
        args = '{"path": "m.txt", "old_text": "one", "new_text": "ONE"}'
        result = await world.call("edit_file", args)
        assert not result.is_error, result.content
        assert path.read_text() == "ONE\ntwo\nthree\nFOUR\n"

        def type_on_the_same_line() -> None:
            path.write_text("ONE!\ntwo\nthree\nFOUR\n")

        world.during_prompt = type_on_the_same_line
        args = '{"path": "m.txt", "old_text": "ONE", "new_text": "uno"}'
        result = await world.call("edit_file", args)
        assert result.is_error
        assert path.read_text() == "ONE!\ntwo\nthree\nFOUR\n"

    _in_world(run)


def test_a_failing_edit_asks_without_a_change() -> None:
    async def run(world: World) -> None:
        (world.ws / "a.txt").write_text("aaa\n")
        result = await world.call(
            "edit_file", '{"path": "a.txt", "old_text": "aa", "new_text": "b"}'
        )
        assert result.is_error and result.data is not None
        assert result.data["error"] == "old_text_ambiguous"
        (request,) = world.requests
        assert request.change is None

    _in_world(run)


def test_a_big_change_is_sent_as_truncated() -> None:
    path = Path("/ws/big.txt")
    small = FileChange(path=path, before=None, after="x")
    assert small.wire() == {"uri": path.as_uri(), "before": None, "after": "x", "truncated": False}
    half = "é" * (MAX_CHANGE_BYTES // 4)  # two UTF-8 bytes each: half the limit
    fits = FileChange(path=path, before=half, after=half)
    assert fits.wire()["truncated"] is False
    big = FileChange(path=path, before=half, after=half + "é")
    assert big.wire() == {"uri": path.as_uri(), "before": None, "after": None, "truncated": True}
