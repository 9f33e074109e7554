"""After a revert or a redo, an open buffer of a file it restored is saved, through the real
server: a client that declared `saveDocuments` is asked to save it, as after the run's own
edits, so the editor does not show unsaved changes for a buffer that holds the file's text.

The client here saves the way VS Code does: a buffer it has not changed is left alone, and a
save over a file on disk newer than the one it read (and of another size) is refused ("the
content of the file is newer") instead of written."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.uris import to_fs_path

from plan_lsp.server.plain import to_plain
from tests import lsp_harness
from tests.e2e.scripts import sample_project, scripted_args, write_script
from tests.e2e.test_step_mode import call, lenses, plan_path, run_ended, step_line, todos_after
from tests.lsp_harness import Editor, running_server

PLAN = (
    "# Plan: a polite greeting\n\n"
    "1. Change the greeting in `hello.py` to `hello`.\n"
    "2. Make it `hello there`.\n"
)
STEPS = ("Change the greeting in hello.py", "Make it hello there")
BEFORE, STEP_1, AFTER = "print('hi')\n", "print('hello')\n", "print('hello there')\n"


def todos(done: int) -> dict[str, Any]:
    return todos_after(STEPS, done)


TURNS: list[dict[str, Any]] = [
    call("plan_write", content=PLAN),
    call("exit_plan_mode"),
    todos(0),
    call("edit_file", path="hello.py", old_text="print('hi')", new_text="print('hello')"),
    todos(1),
    call("edit_file", path="hello.py", old_text="'hello'", new_text="'hello there'"),
    todos(2),
    {"text": "Both steps are done."},
]

# The same two steps written by commands, behind the open buffer.
BASH_TURNS: list[dict[str, Any]] = [
    call("plan_write", content=PLAN),
    call("exit_plan_mode"),
    todos(0),
    call("bash", command=f"printf %s {STEP_1.strip()!r} > hello.py && echo >> hello.py"),
    todos(1),
    call("bash", command=f"printf %s {AFTER.strip()!r} > hello.py && echo >> hello.py"),
    todos(2),
    {"text": "Both steps are done."},
]


@dataclass
class Saved:
    """What the editor knows of a buffer's file, and whether the buffer holds changes."""

    mtime_ms: int
    size: int
    dirty: bool = False


class SavingEditor:
    """The harness's editor, saving buffers on request as VS Code does."""

    def __init__(self, ed: Editor) -> None:
        self.ed = ed
        self.files: dict[str, Saved] = {}
        self.conflicts: list[str] = []
        features = ed.client.protocol.fm.features
        apply = features[types.WORKSPACE_APPLY_EDIT]

        def apply_edit(params: types.ApplyWorkspaceEditParams) -> Any:
            result = apply(params)
            if result.applied:
                for change in params.edit.document_changes or []:
                    if not isinstance(change, types.TextDocumentEdit):
                        continue
                    if change.text_document.uri in self.files:  # not PLAN.md: never saved
                        self.files[change.text_document.uri].dirty = True
            return result

        features[types.WORKSPACE_APPLY_EDIT] = apply_edit
        features["planLsp/saveDocument"] = self.save

    def open(self, path: Path) -> None:
        self.ed.open(path)
        self.files[path.resolve().as_uri()] = self._stat(path)

    def user_saves(self, path: Path, text: str) -> None:
        """The user typed `text` into the buffer and saved it."""
        self.reload(path, text)
        path.write_text(text)
        self.files[path.resolve().as_uri()] = self._stat(path)
        self.ed.client.text_document_did_save(
            types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=path.resolve().as_uri())
            )
        )

    def reload(self, path: Path, text: str | None = None) -> None:
        """The buffer takes `text` (by default the file's, as VS Code reloads a buffer with
        no changes when its file changes on disk)."""
        uri = path.resolve().as_uri()
        buf = self.ed.ed.buffers[uri]
        buf.text, buf.version = path.read_text() if text is None else text, buf.version + 1
        self.ed.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=buf.version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=buf.text)],
            )
        )
        if text is None:
            self.files[uri] = self._stat(path)

    @staticmethod
    def _stat(path: Path) -> Saved:
        st = path.stat()
        return Saved(st.st_mtime_ns // 1_000_000, st.st_size)

    def save(self, params: Any) -> dict[str, Any]:
        uri = to_plain(params)["uri"]
        known = self.files.get(uri)
        path = Path(to_fs_path(uri) or "")
        text = self.ed.buffer_text(path)
        if known is None or text is None:
            return {"saved": False}
        if not known.dirty:
            return {"saved": True}
        disk = self._stat(path)
        if disk.mtime_ms > known.mtime_ms and disk.size != known.size:
            self.conflicts.append(f"{path.name}: the content of the file is newer")
            return {"saved": False}
        path.write_text(text)
        self.files[uri] = self._stat(path)
        return {"saved": True}

    def dirty(self) -> list[str]:
        return sorted(Path(to_fs_path(uri) or "").name for uri, f in self.files.items() if f.dirty)


@asynccontextmanager
async def session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, turns: list[dict[str, Any]],
    hello_text: str | None = None,
) -> AsyncIterator[tuple[Editor, SavingEditor, Path, Path]]:  # fmt: skip
    """The real server on the sample project (hello.py holding `hello_text` if given), with
    PLAN.md and hello.py open in an editor that saves on request: (the harness's editor, the
    saving one, PLAN.md, hello.py)."""
    lsp_harness.declare_save_documents(monkeypatch)
    ws = sample_project(tmp_path / "ws")
    path, hello = plan_path(ws), ws / "hello.py"
    path.parent.mkdir(parents=True)
    path.write_text("")
    if hello_text is not None:
        hello.write_text(hello_text)
    script = write_script(tmp_path / "script.json", turns)
    async with running_server([ws], *scripted_args(script)) as ed:
        editor = SavingEditor(ed)
        ed.open(path)
        editor.open(hello)
        yield ed, editor, path, hello


async def plan_and_run(ed: Editor, permission_mode: str) -> None:
    """The plan submitted, approved, and its Do run to the end."""
    answer = await ed.request("planLsp/prompt", {"text": "be polite"})
    assert answer["stopReason"] == "plan_submitted", answer
    mark = len(ed.ed.updates)
    await ed.request("planLsp/approvePlan", {"permissionMode": permission_mode})
    await run_ended(ed, mark, "end_turn")


async def test_a_revert_and_a_redo_leave_the_open_buffer_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with session(tmp_path, monkeypatch, TURNS) as (ed, editor, path, hello):
        await plan_and_run(ed, "auto_edit")
        # The run's own edits: saved by the editor.
        assert hello.read_text() == AFTER == ed.buffer_text(hello)
        assert editor.dirty() == [] and editor.conflicts == []

        found = await lenses(ed, path)
        at_step_2 = step_line(2, PLAN)
        (revert,) = [c for line, t, c in found
                     if line == at_step_2 and t == "Revert to before this step"]  # fmt: skip
        asked = time.time_ns()
        result = await ed.command(*revert)
        assert result["restored"] == ["hello.py"], result
        assert hello.read_text() == STEP_1 == ed.buffer_text(hello)
        assert editor.conflicts == [], editor.conflicts
        assert editor.dirty() == [], "the reverted buffer was left with unsaved changes"
        # The editor's save wrote the file: its time is not left in the past.
        assert hello.stat().st_mtime_ns >= asked - 1_000_000_000

        redone = await ed.request("planLsp/redo", {})
        assert redone["restored"] == ["hello.py"], redone
        assert hello.read_text() == AFTER == ed.buffer_text(hello)
        assert editor.conflicts == [] and editor.dirty() == []


async def test_a_buffer_saved_by_the_user_is_saved_after_a_revert_of_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hello.py is opened with text of the user's not on disk, which the user then saves (the
    server learns the file's time from `didSave`); the run's commands write it behind the
    buffer, which the editor reloads; a revert brings the buffer and the file back and the
    editor saves it without taking the file for newer."""
    on_disk = "print('an older draft')\n"
    async with session(tmp_path, monkeypatch, BASH_TURNS, on_disk) as (ed, editor, path, hello):
        editor.user_saves(hello, BEFORE)
        await plan_and_run(ed, "yolo")
        assert hello.read_text() == AFTER
        editor.reload(hello)
        found, at_step_2 = await lenses(ed, path), step_line(2, PLAN)
        (revert,) = [c for line, t, c in found
                     if line == at_step_2 and t == "Revert to before this step"]  # fmt: skip
        result = await ed.command(*revert)
        assert result["restored"] == ["hello.py"], result
        assert hello.read_text() == STEP_1 == ed.buffer_text(hello)
        assert editor.conflicts == [], editor.conflicts
        assert editor.dirty() == [], "the reverted buffer was left with unsaved changes"
