"""Read-only file tools and workspace confinement."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.policy.ports import FileEdit, PermissionRequest
from plan_lsp.protocol.state import Question
from plan_lsp.tools import fs
from plan_lsp.tools.base import ToolContext, ToolResult
from plan_lsp.tools.paths import PathRefused, display_path, resolve_path
from tests.needs import need_program


class FakeEditor:
    def __init__(self, enumerable: bool = True) -> None:
        self.docs: dict[Path, str] = {}
        self.enumerable = enumerable

    def open_document_text(self, path: Path) -> str | None:
        return self.docs.get(Path(path))

    def open_document_paths(self) -> list[Path]:
        if not self.enumerable:
            raise NotImplementedError
        return list(self.docs)

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        self.docs[Path(edit.path)] = edit.new_text
        return True


class FakeUser:
    async def request_permission(self, request: PermissionRequest) -> str:
        return "reject_once"

    async def ask_questions(self, run_id: str, questions: list[Question]) -> None:
        return None


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = (tmp_path / "ws").resolve()
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "main.py").write_text("import os\n\ndef main():\n    return 1\n")
    (root / "src" / "pkg" / "util.py").write_text("def helper():\n    return 'needle'\n")
    (root / "README.md").write_text("# Demo\nneedle in readme\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("needle in git\n")
    return root


@pytest.fixture
def editor() -> FakeEditor:
    return FakeEditor()


@pytest.fixture
def ctx(ws: Path, editor: FakeEditor) -> ToolContext:
    return ToolContext(
        workspace_roots=[ws],
        plans_dir=ws / ".plan-lsp" / "plans",
        run_id="run-1",
        editor=editor,
        user=FakeUser(),  # type: ignore[arg-type]
        emit=lambda kind, payload: None,
    )


def _error(result: ToolResult) -> str:
    assert result.is_error, result.content
    assert result.data is not None
    return str(result.data["error"])


# -- confinement ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("/etc/passwd", "outside the workspace"),
        ("../outside", "climbs out of the workspace with '..'"),
        ("src/../../outside", "climbs out"),
        ("a\x00b", "NUL byte"),
        ("~/.ssh/id_rsa", "home-directory"),
    ],
)
def test_paths_refused(ws: Path, raw: str, message: str) -> None:
    with pytest.raises(PathRefused, match=message):
        resolve_path(raw, [ws])


def test_symlink_escape_is_refused(ws: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    (ws / "link.txt").symlink_to(secret)
    (ws / "dirlink").symlink_to(tmp_path)
    with pytest.raises(PathRefused, match="symlink"):
        resolve_path("link.txt", [ws])
    with pytest.raises(PathRefused, match="symlink"):
        resolve_path("dirlink/secret.txt", [ws])


def test_paths_allowed(ws: Path) -> None:
    assert resolve_path("src/../README.md", [ws]) == ws / "README.md"
    assert resolve_path(str(ws / "src"), [ws]) == ws / "src"
    assert resolve_path(None, [ws]) == ws
    (ws / "inner").symlink_to(ws / "src")
    assert resolve_path("inner/main.py", [ws]) == ws / "src" / "main.py"
    assert display_path(ws / "src" / "main.py", [ws]) == "src/main.py"


def test_second_workspace_root(ws: Path, tmp_path: Path) -> None:
    other = (tmp_path / "other").resolve()
    other.mkdir()
    assert resolve_path(str(other / "x"), [ws, other]) == other / "x"


async def test_file_tools_refuse_outside_paths(ctx: ToolContext) -> None:
    for run, args in [
        (fs.read_file, {"path": "/etc/passwd"}),
        (fs.list_dir, {"path": ".."}),
        (fs.glob_tool, {"pattern": "*", "path": "/"}),
        (fs.grep, {"pattern": "root", "path": "/etc"}),
    ]:
        result = await run(args, ctx)
        assert _error(result) == "path_refused"
        assert "root:" not in result.content


# -- read_file ------------------------------------------------------------------------------


async def test_read_whole_file(ctx: ToolContext) -> None:
    result = await fs.read_file({"path": "src/main.py"}, ctx)
    assert result.content == "import os\n\ndef main():\n    return 1\n"
    assert result.data is not None and result.data["total_lines"] == 4


async def test_read_line_range(ctx: ToolContext) -> None:
    result = await fs.read_file({"path": "src/main.py", "start_line": 3, "end_line": 3}, ctx)
    assert result.content.startswith("def main():\n")
    assert "lines 3-3 of 4" in result.content


async def test_read_past_end_and_bad_range(ctx: ToolContext) -> None:
    assert _error(await fs.read_file({"path": "src/main.py", "start_line": 9}, ctx)) == (
        "invalid_arguments"
    )
    bad = await fs.read_file({"path": "src/main.py", "start_line": 3, "end_line": 2}, ctx)
    assert _error(bad) == "invalid_arguments"


async def test_read_size_cap(ws: Path, ctx: ToolContext) -> None:
    line = "x" * 99 + "\n"
    (ws / "big.txt").write_text(line * 5000)  # ~500 KB
    result = await fs.read_file({"path": "big.txt"}, ctx)
    assert result.data is not None and result.data["truncated"] is True
    assert len(result.content.encode()) <= fs.READ_CAP_BYTES + 300
    last = result.data["end_line"]
    assert f"start_line={last + 1}" in result.content
    rest = await fs.read_file({"path": "big.txt", "start_line": last + 1}, ctx)
    assert rest.content.startswith(line)


async def test_read_binary_and_missing_and_directory(ws: Path, ctx: ToolContext) -> None:
    (ws / "blob.bin").write_bytes(b"\x89PNG\x00\x00data")
    assert _error(await fs.read_file({"path": "blob.bin"}, ctx)) == "binary_file"
    assert _error(await fs.read_file({"path": "nope.txt"}, ctx)) == "not_found"
    assert _error(await fs.read_file({"path": "src"}, ctx)) == "is_directory"


async def test_read_empty_file(ws: Path, ctx: ToolContext) -> None:
    (ws / "empty.txt").write_text("")
    result = await fs.read_file({"path": "empty.txt"}, ctx)
    assert not result.is_error and "is empty" in result.content


async def test_read_sees_the_open_buffer(ws: Path, ctx: ToolContext, editor: FakeEditor) -> None:
    editor.docs[ws / "src" / "main.py"] = "unsaved buffer text\n"
    result = await fs.read_file({"path": "src/main.py"}, ctx)
    assert result.content == "unsaved buffer text\n"
    # A buffer for a file not yet on disk is readable too.
    editor.docs[ws / "new.py"] = "fresh\n"
    assert (await fs.read_file({"path": "new.py"}, ctx)).content == "fresh\n"


# -- list_dir / glob ------------------------------------------------------------------------


async def test_list_dir(ctx: ToolContext) -> None:
    result = await fs.list_dir({}, ctx)
    assert result.content.splitlines() == [".git/", "README.md", "src/"]
    assert (await fs.list_dir({"path": "src"}, ctx)).content.splitlines() == ["main.py", "pkg/"]
    assert _error(await fs.list_dir({"path": "README.md"}, ctx)) == "not_a_directory"


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**/*.py", None, ["src/main.py", "src/pkg/util.py"]),
        ("*.py", "src", ["src/main.py"]),
        ("*.md", None, ["README.md"]),
        ("src/**", None, ["src/main.py", "src/pkg/util.py"]),
        ("**/config", None, []),
    ],
)
async def test_glob(ctx: ToolContext, pattern: str, path: str | None, expected: list[str]) -> None:
    args: dict[str, Any] = {"pattern": pattern}
    if path:
        args["path"] = path
    result = await fs.glob_tool(args, ctx)
    assert result.data is not None and result.data["count"] == len(expected)
    lines = [ln for ln in result.content.splitlines() if not ln.startswith("[plan-lsp")]
    assert lines == expected


@pytest.mark.parametrize("pattern", ["../*", "/etc/*", "src/../../*"])
async def test_glob_refuses_escaping_patterns(ctx: ToolContext, pattern: str) -> None:
    assert _error(await fs.glob_tool({"pattern": pattern}, ctx)) == "invalid_arguments"


async def test_glob_skips_symlinks_leading_outside(
    ws: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    (tmp_path / "outside.py").write_text("x")
    (ws / "src" / "leak.py").symlink_to(tmp_path / "outside.py")
    result = await fs.glob_tool({"pattern": "**/*.py"}, ctx)
    assert "leak.py" not in result.content


# -- grep ------------------------------------------------------------------------------------


@pytest.fixture(params=["ripgrep", "python"])
def grep_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    backend: str = request.param
    if backend == "ripgrep":
        need_program("rg", "the grep tool's fast path")
    if backend == "python":
        monkeypatch.setattr("shutil.which", lambda name: None)
    return backend


def _lines(result: ToolResult) -> list[str]:
    return [ln for ln in result.content.splitlines() if not ln.startswith("[plan-lsp")]


@pytest.mark.process
async def test_grep_output_shape(ctx: ToolContext, grep_backend: str) -> None:
    result = await fs.grep({"pattern": "needle"}, ctx)
    assert _lines(result) == [
        "README.md:2:needle in readme",
        "src/pkg/util.py:2:    return 'needle'",
    ]


@pytest.mark.process
async def test_grep_options(ctx: ToolContext, grep_backend: str) -> None:
    assert _lines(
        await fs.grep({"pattern": "NEEDLE", "ignore_case": True, "glob": "*.py"}, ctx)
    ) == ["src/pkg/util.py:2:    return 'needle'"]
    assert _lines(await fs.grep({"pattern": "NEEDLE"}, ctx)) == []
    assert _lines(await fs.grep({"pattern": "def", "path": "src/pkg"}, ctx)) == [
        "src/pkg/util.py:1:def helper():"
    ]
    assert _lines(await fs.grep({"pattern": "def", "path": "src/main.py"}, ctx)) == [
        "src/main.py:3:def main():"
    ]


@pytest.mark.process
async def test_grep_sees_open_buffers(
    ws: Path, ctx: ToolContext, editor: FakeEditor, grep_backend: str
) -> None:
    editor.docs[ws / "src" / "main.py"] = "needle typed but not saved\n"
    editor.docs[ws / "README.md"] = "# Demo, needle removed\n"
    assert _lines(await fs.grep({"pattern": "needle"}, ctx)) == [
        "README.md:1:# Demo, needle removed",
        "src/main.py:1:needle typed but not saved",
        "src/pkg/util.py:2:    return 'needle'",
    ]


@pytest.mark.process
async def test_grep_cap(ws: Path, ctx: ToolContext, grep_backend: str) -> None:
    (ws / "many.txt").write_text("hit\n" * (fs.GREP_CAP + 50))
    result = await fs.grep({"pattern": "hit"}, ctx)
    assert len(_lines(result)) == fs.GREP_CAP
    assert "capped" in result.content


@pytest.mark.process
async def test_grep_cap_with_much_more_output_waiting(ws: Path, ctx: ToolContext) -> None:
    """Far more matches than the cap: ripgrep has filled the pipe (and asyncio's buffer, which
    then pauses reading) by the time the tool stops reading and kills it. The call must still
    end; it hung forever when it waited for the process before draining the pipe. (The bound
    only turns a hang into a failure.)"""
    need_program("rg", "the grep tool's fast path")
    line = "hit " + "x" * 400 + "\n"
    for n in range(40):
        (ws / f"big{n}.txt").write_text(line * 500)  # ~8 MB of JSON from rg in all
    result = await asyncio.wait_for(fs.grep({"pattern": "hit"}, ctx), 60)
    assert len(_lines(result)) == fs.GREP_CAP and "capped" in result.content


@pytest.mark.process
async def test_grep_bad_regex(ctx: ToolContext, grep_backend: str) -> None:
    assert _error(await fs.grep({"pattern": "(unclosed"}, ctx)) in (
        "invalid_pattern",
        "grep_failed",
    )


@pytest.mark.process
async def test_grep_fallback_skips_binary(
    ws: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    (ws / "blob.bin").write_bytes(b"needle\x00\x01")
    assert "blob.bin" not in (await fs.grep({"pattern": "needle"}, ctx)).content


# -- never through a link, never blocked on ---------------------------------------------------


def _fifo_socket_and_links(ws: Path, outside: Path) -> Iterator[None]:
    """A workspace holding a FIFO, a socket, a file link and a folder link to a secret
    outside it, and a file link inside it."""
    outside.mkdir()
    (outside / "id_ed25519").write_text("PRIVATE KEY needle\n")
    os.mkfifo(ws / "pipe.md")
    (ws / "docs").mkdir()
    (ws / "docs" / "key.txt").symlink_to(outside / "id_ed25519")
    (ws / "docs" / "home").symlink_to(outside)
    (ws / "docs" / "readme-link.md").symlink_to(ws / "README.md")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(ws / "sock.md"))
        yield


@pytest.mark.parametrize(
    ("name", "code", "said"),
    [
        ("pipe.md", "not_a_regular_file", "pipe.md is a FIFO, not a regular file"),
        ("sock.md", "not_a_regular_file", "sock.md is a socket, not a regular file"),
        ("docs/key.txt", "path_refused", "outside the workspace"),
        ("docs/home/id_ed25519", "path_refused", "outside the workspace"),
    ],
)
async def test_read_file_refuses_at_once_what_is_not_a_regular_file_inside(
    ws: Path, tmp_path: Path, ctx: ToolContext, name: str, code: str, said: str
) -> None:
    for _ in _fifo_socket_and_links(ws, tmp_path / "home"):
        result = await asyncio.wait_for(fs.read_file({"path": name}, ctx), 5)
        assert _error(result) == code and said in result.content
        assert "PRIVATE KEY" not in result.content


async def test_read_file_never_reads_through_a_link_swapped_in_after_the_check(
    ws: Path, tmp_path: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path is checked, then a folder on the way becomes a link out of the workspace
    before the file is opened: the open (walked from the root) refuses it."""
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "main.py").write_text("PRIVATE KEY\n")
    checked = fs.resolve_path

    def check_then_swap(raw: object, roots: list[Path]) -> Path:
        path = checked(raw, roots)
        shutil.rmtree(ws / "src")
        (ws / "src").symlink_to(tmp_path / "home")
        return path

    monkeypatch.setattr(fs, "resolve_path", check_then_swap)
    result = await fs.read_file({"path": "src/main.py"}, ctx)
    assert _error(result) == "not_a_regular_file"
    assert "src is a symbolic link" in result.content and "PRIVATE KEY" not in result.content


async def test_read_file_keeps_line_numbers_after_a_huge_line_and_bounds_the_file(
    ws: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "wide.txt").write_text("x" * (3 * fs.READ_CAP_BYTES) + "\nsecond\n")
    first = await fs.read_file({"path": "wide.txt"}, ctx)
    assert first.data is not None and first.data["truncated"] is True
    second = await fs.read_file({"path": "wide.txt", "start_line": 2}, ctx)
    assert second.content.startswith("second\n") and "lines 2-2 of 2" in second.content
    monkeypatch.setattr(fs, "READ_MAX_FILE_BYTES", 10)
    result = await fs.read_file({"path": "wide.txt"}, ctx)
    assert _error(result) == "too_large" and "grep" in result.content


async def test_list_dir_shows_links_as_themselves(
    ws: Path, tmp_path: Path, ctx: ToolContext
) -> None:
    for _ in _fifo_socket_and_links(ws, tmp_path / "home"):
        listing = (await fs.list_dir({"path": "docs"}, ctx)).content.splitlines()
        assert listing == ["home", "key.txt", "readme-link.md"]


@pytest.mark.process
async def test_grep_searches_only_regular_files_and_never_through_a_link(
    ws: Path, tmp_path: Path, ctx: ToolContext, grep_backend: str
) -> None:
    """Like ripgrep without -L: links (out of the workspace or inside it), FIFOs and
    sockets are skipped; the search neither leaks nor blocks."""
    for _ in _fifo_socket_and_links(ws, tmp_path / "home"):
        result = await asyncio.wait_for(fs.grep({"pattern": "needle|Demo"}, ctx), 10)
        assert _lines(result) == [
            "README.md:1:# Demo",
            "README.md:2:needle in readme",
            "src/pkg/util.py:2:    return 'needle'",
        ]


@pytest.mark.parametrize("name", ["pipe.md", "sock.md"])
async def test_grep_refuses_a_path_that_is_not_a_folder_or_a_regular_file(
    ws: Path, tmp_path: Path, ctx: ToolContext, grep_backend: str, name: str
) -> None:
    for _ in _fifo_socket_and_links(ws, tmp_path / "home"):
        result = await asyncio.wait_for(fs.grep({"pattern": "x", "path": name}, ctx), 10)
        assert _error(result) == "not_a_regular_file"
        assert f"{name} is a" in result.content


@pytest.mark.process
async def test_places_the_sandbox_hides_are_hidden_from_the_file_tools(
    ws: Path, ctx: ToolContext, grep_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A credentials file named by the environment and the user's plan-lsp state folder
    (the state key), both inside the workspace: not read, not found, not searched."""
    (ws / "keys").mkdir()
    (ws / "keys" / "gcp.json").write_text("needle-secret\n")
    (ws / "xdg" / "plan-lsp").mkdir(parents=True)
    (ws / "xdg" / "plan-lsp" / "state-key").write_text("needle-key\n")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(ws / "keys" / "gcp.json"))
    monkeypatch.setenv("XDG_STATE_HOME", str(ws / "xdg"))
    for path in ("keys/gcp.json", "xdg/plan-lsp/state-key"):
        result = await fs.read_file({"path": path}, ctx)
        assert result.is_error and "hidden from the agent" in result.content, result.content
    listed = await fs.list_dir({"path": "xdg/plan-lsp"}, ctx)
    assert listed.is_error and "hidden" in listed.content
    found = await fs.glob_tool({"pattern": "**/*"}, ctx)
    assert "gcp.json" not in found.content and "state-key" not in found.content
    searched = await fs.grep({"pattern": "needle-"}, ctx)
    assert "needle-secret" not in searched.content and "needle-key" not in searched.content
    (ws / "keys" / "other.txt").write_text("needle-visible\n")
    assert "needle-visible" in (await fs.grep({"pattern": "needle-"}, ctx)).content
