"""write_file / edit_file through the workspace-edit gate; todo_write; ask_user; registry."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.policy.ports import FileEdit, PermissionRequest
from plan_lsp.policy.safety import ArgumentsRefused, Safety, ToolDefinition
from plan_lsp.protocol.state import Question, Todo, WorkMode
from plan_lsp.tools import fs
from plan_lsp.tools.ask_user import ASK_USER_TOOL, ask_user
from plan_lsp.tools.base import Tool, ToolContext, ToolResult
from plan_lsp.tools.edit import EDIT_FILE_TOOL, MODE_PROVIDER_KEY, WRITE_FILE_TOOL
from plan_lsp.tools.registry import ToolRegistry, builtin_registry
from plan_lsp.tools.todo import TODO_WRITE_TOOL, todo_write

write_file, edit_file = WRITE_FILE_TOOL.run, EDIT_FILE_TOOL.run


class FakeEditor:
    def __init__(self) -> None:
        self.docs: dict[Path, str] = {}
        self.applied: list[FileEdit] = []

    def open_document_text(self, path: Path) -> str | None:
        return self.docs.get(Path(path))

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        self.applied.append(edit)
        self.docs[Path(edit.path)] = edit.new_text
        return True


class FakeUser:
    def __init__(self, answers: dict[str, list[str]] | None = None) -> None:
        self.answers = answers
        self.asked: list[list[Question]] = []

    async def request_permission(self, request: PermissionRequest) -> str:
        return "reject_once"

    async def ask_questions(
        self, run_id: str, questions: list[Question]
    ) -> dict[str, list[str]] | None:
        self.asked.append(questions)
        return self.answers


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = (tmp_path / "ws").resolve()
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x = 1\ny = 2\nx = 1\n")
    return root


@pytest.fixture
def editor() -> FakeEditor:
    return FakeEditor()


def _ctx(
    ws: Path, editor: FakeEditor, mode: WorkMode | None, user: FakeUser | None = None
) -> ToolContext:
    extra: dict[str, Any] = {}
    if mode is not None:
        extra[MODE_PROVIDER_KEY] = lambda: mode
    return ToolContext(
        workspace_roots=[ws],
        plans_dir=ws / ".plan-lsp" / "plans",
        run_id="run-1",
        editor=editor,
        user=user or FakeUser(),  # type: ignore[arg-type]
        emit=lambda kind, payload: None,
        extra=extra,
    )


@pytest.fixture
def build(ws: Path, editor: FakeEditor) -> ToolContext:
    return _ctx(ws, editor, WorkMode.BUILD)


def _code(result: ToolResult) -> str:
    assert result.is_error, result.content
    assert result.data is not None
    return str(result.data["error"])


async def test_write_file_creates_and_overwrites(ws: Path, build: ToolContext) -> None:
    result = await write_file({"path": "src/new.py", "content": "print(1)\n"}, build)
    assert not result.is_error and "created src/new.py" in result.content
    assert (ws / "src" / "new.py").read_text() == "print(1)\n"
    result = await write_file({"path": "src/new.py", "content": "print(2)\n"}, build)
    assert "updated" in result.content
    assert (ws / "src" / "new.py").read_text() == "print(2)\n"


async def test_write_file_refuses_outside_and_plan_mode(
    ws: Path, editor: FakeEditor, build: ToolContext
) -> None:
    assert _code(await write_file({"path": "../x", "content": "x"}, build)) == "path_refused"
    plan = _ctx(ws, editor, WorkMode.PLAN)
    result = await write_file({"path": "src/a.py", "content": "gone"}, plan)
    assert _code(result) == "edit_refused" and "plan mode" in result.content
    assert (ws / "src" / "a.py").read_text() == "x = 1\ny = 2\nx = 1\n"


async def test_without_a_mode_provider_edits_assume_plan_mode(ws: Path, editor: FakeEditor) -> None:
    ctx = _ctx(ws, editor, None)
    assert _code(await write_file({"path": "src/b.py", "content": "x"}, ctx)) == "edit_refused"
    assert not (ws / "src" / "b.py").exists()
    broken = _ctx(ws, editor, None)
    broken.extra[MODE_PROVIDER_KEY] = lambda: "build"  # not a WorkMode: fail closed
    assert _code(await write_file({"path": "src/b.py", "content": "x"}, broken)) == "edit_refused"


@pytest.mark.parametrize(
    "path",
    [".plan-lsp/state.db", ".plan-lsp/config.toml", ".plan-lsp/plans/PLAN.md",
     ".plan-lsp/revisions/PLAN.rev1.md", "src/../.plan-lsp/x", "src/db-link"],
)  # fmt: skip
@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
async def test_the_server_folder_is_off_limits_in_build_mode(
    ws: Path, build: ToolContext, path: str, tool: str
) -> None:
    server = ws / ".plan-lsp"
    (server / "plans").mkdir(parents=True)
    (server / "state.db").write_bytes(b"SQLite format 3\x00\xff")  # binary: refused before reading
    (server / "config.toml").write_text("x = 1\n")
    (ws / "src" / "db-link").symlink_to(server / "state.db")
    before = sorted((p, p.read_bytes() if p.is_file() else b"") for p in server.rglob("*"))
    if tool == "write_file":
        result = await write_file({"path": path, "content": "x = 2\n"}, build)
    else:
        result = await edit_file({"path": path, "old_text": "x = 1", "new_text": "x = 2"}, build)
    assert _code(result) == "edit_refused"
    shown = ".plan-lsp/state.db" if path == "src/db-link" else path.replace("src/../", "")
    assert result.content.count(f"{shown} is inside .plan-lsp/") == 1
    assert sorted((p, p.read_bytes() if p.is_file() else b"") for p in server.rglob("*")) == before


async def test_reading_the_server_folder_is_allowed(ws: Path, build: ToolContext) -> None:
    (ws / ".plan-lsp").mkdir()
    (ws / ".plan-lsp" / "config.toml").write_text("x = 1\n")
    result = await fs.read_file({"path": ".plan-lsp/config.toml"}, build)
    assert not result.is_error and "x = 1" in result.content


async def test_a_fifo_is_refused_without_blocking(ws: Path, build: ToolContext) -> None:
    os.mkfifo(ws / "src" / "pipe")
    result = await write_file({"path": "src/pipe", "content": "x"}, build)
    assert _code(result) == "read_failed" and "src/pipe is a FIFO" in result.content


async def test_edit_keeps_an_executable_mode(ws: Path, build: ToolContext) -> None:
    script = ws / "src" / "run.sh"
    script.write_text("#!/bin/sh\necho a\n")
    script.chmod(0o755)
    result = await edit_file({"path": "src/run.sh", "old_text": "a", "new_text": "b"}, build)
    assert not result.is_error
    assert script.read_text() == "#!/bin/sh\necho b\n" and script.stat().st_mode & 0o777 == 0o755


async def test_edit_file_unique_match(ws: Path, build: ToolContext) -> None:
    result = await edit_file({"path": "src/a.py", "old_text": "y = 2", "new_text": "y = 3"}, build)
    assert not result.is_error
    assert (ws / "src" / "a.py").read_text() == "x = 1\ny = 3\nx = 1\n"


async def test_edit_file_missing_and_ambiguous(ws: Path, build: ToolContext) -> None:
    missing = await edit_file({"path": "src/a.py", "old_text": "z = 9", "new_text": "q"}, build)
    assert _code(missing) == "old_text_not_found" and "not found" in missing.content
    twice = await edit_file({"path": "src/a.py", "old_text": "x = 1", "new_text": "q"}, build)
    assert _code(twice) == "old_text_ambiguous"
    assert "occurs 2 times" in twice.content
    overlapping = await edit_file({"path": "src/a.py", "old_text": "\n", "new_text": "q"}, build)
    assert "occurs 3 times" in overlapping.content
    assert (
        _code(await edit_file({"path": "src/nope.py", "old_text": "a", "new_text": "b"}, build))
        == "not_found"
    )
    assert (
        _code(
            await edit_file({"path": "src/a.py", "old_text": "y = 2", "new_text": "y = 2"}, build)
        )
        == "no_change"
    )
    assert (ws / "src" / "a.py").read_text() == "x = 1\ny = 2\nx = 1\n"


async def test_edit_file_crlf(ws: Path, build: ToolContext) -> None:
    (ws / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = await edit_file({"path": "win.txt", "old_text": "one\ntwo", "new_text": "1\n2"}, build)
    assert not result.is_error
    assert (ws / "win.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


@pytest.mark.process
async def test_edits_to_open_documents_go_through_the_editor_and_reads_follow(
    ws: Path, editor: FakeEditor, build: ToolContext
) -> None:
    path = ws / "src" / "a.py"
    editor.docs[path] = "x = 1\ny = 2 # typed, unsaved\n"
    result = await edit_file(
        {"path": "src/a.py", "old_text": "y = 2 # typed, unsaved", "new_text": "y = 5"}, build
    )
    assert not result.is_error, result.content
    assert editor.docs[path] == "x = 1\ny = 5\n"
    assert path.read_text() == "x = 1\ny = 2\nx = 1\n"  # disk untouched
    # What the agent reads next is what the user sees.
    assert (await fs.read_file({"path": "src/a.py"}, build)).content == "x = 1\ny = 5\n"
    grep = await fs.grep({"pattern": "y = ", "path": "src"}, build)
    assert grep.content.splitlines() == ["src/a.py:2:y = 5"]


@pytest.mark.process
async def test_write_then_read_after_disk_write(ws: Path, build: ToolContext) -> None:
    await write_file({"path": "notes.txt", "content": "alpha\nbeta\n"}, build)
    assert (await fs.read_file({"path": "notes.txt"}, build)).content == "alpha\nbeta\n"
    assert (await fs.grep({"pattern": "beta"}, build)).content == "notes.txt:2:beta"


# -- todo_write -----------------------------------------------------------------------------


async def test_todo_write(ws: Path, editor: FakeEditor) -> None:
    seen: list[list[Todo]] = []
    ctx = _ctx(ws, editor, WorkMode.PLAN)
    ctx.set_todos = seen.append
    todos = [
        {"content": "read code", "status": "completed"},
        {"content": "write plan", "status": "in_progress"},
        {"content": "ship", "status": "pending"},
    ]
    result = await todo_write({"todos": todos}, ctx)
    assert not result.is_error
    assert result.content.splitlines() == ["[x] read code", "[~] write plan", "[ ] ship"]
    assert [t.content for t in seen[0]] == ["read code", "write plan", "ship"]


async def test_todo_write_rejects_two_in_progress(ws: Path, editor: FakeEditor) -> None:
    seen: list[list[Todo]] = []
    ctx = _ctx(ws, editor, WorkMode.PLAN)
    ctx.set_todos = seen.append
    todos = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]
    result = await todo_write({"todos": todos}, ctx)
    assert _code(result) == "invalid_todos" and "at most one" in result.content
    assert seen == []
    # A malformed item is refused by the tool's arguments, before the tool runs.
    with pytest.raises(ArgumentsRefused, match=r"todos\[0\]\.status"):
        TODO_WRITE_TOOL.definition.check_arguments({"todos": [{"content": "a", "status": "doing"}]})


# -- ask_user -------------------------------------------------------------------------------

QUESTIONS = [{"id": "db", "text": "Which database?", "options": ["sqlite", "postgres"]}]


async def test_ask_user_answers(ws: Path, editor: FakeEditor) -> None:
    user = FakeUser({"db": ["sqlite"]})
    result = await ask_user({"questions": QUESTIONS}, _ctx(ws, editor, WorkMode.PLAN, user))
    assert result.data == {"answers": {"db": ["sqlite"]}}
    assert user.asked[0][0].options == ["sqlite", "postgres"]


async def test_ask_user_dismissed(ws: Path, editor: FakeEditor) -> None:
    result = await ask_user({"questions": QUESTIONS}, _ctx(ws, editor, WorkMode.PLAN, FakeUser()))
    assert not result.is_error
    assert result.data == {"dismissed": True} and "dismissed" in result.content


async def test_ask_user_validates(ws: Path, editor: FakeEditor) -> None:
    ctx = _ctx(ws, editor, WorkMode.PLAN, FakeUser({}))
    dup = [QUESTIONS[0], QUESTIONS[0]]
    assert "repeated: db" in (await ask_user({"questions": dup}, ctx)).content
    # No questions, or a question without options: refused by the arguments, before it runs.
    for refused in ([], [{"id": "x", "text": "?", "options": []}]):
        with pytest.raises(ArgumentsRefused, match="at least 1 item"):
            ASK_USER_TOOL.definition.check_arguments({"questions": refused})


# -- registry -------------------------------------------------------------------------------


async def _noop(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return ToolResult(content="ok")


def test_builtin_registry_labels() -> None:
    registry = builtin_registry()
    safety = {d.name: d.safety for d in registry.definitions()}
    assert safety["write_file"] is Safety.SIDE_EFFECT and safety["edit_file"] is Safety.SIDE_EFFECT
    for name in ("read_file", "list_dir", "glob", "grep", "todo_write", "ask_user"):
        assert safety[name] is Safety.READ_ONLY
    if "bash" in registry:
        bash = registry.get("bash")
        assert bash is not None and bash.definition.classified_per_call


def test_registry_rejects_duplicates_unless_replacing() -> None:
    registry = ToolRegistry()
    definition = ToolDefinition(
        name="mcp__db__query",
        description="query",
        input_schema={"type": "object"},
        safety=Safety.SIDE_EFFECT,
    )
    tool = Tool(definition, _noop)
    registry.register(tool)
    assert registry.get("mcp__db__query") is tool
    with pytest.raises(ValueError, match="already registered"):
        registry.register(tool)
    registry.register(Tool(tool.definition, _noop), replace=True)
    assert len(registry) == 1
