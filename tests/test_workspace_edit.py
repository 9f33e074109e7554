"""Workspace-edit gate: where files may change, open buffers, stale edits, atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plan_lsp.policy.ports import FileEdit
from plan_lsp.policy.workspace_edit import StaleEdit, apply_file_edit, rebase_edit
from plan_lsp.protocol.state import WorkMode


class FakeEditor:
    def __init__(self) -> None:
        self.docs: dict[Path, str] = {}
        self.applied: list[FileEdit] = []
        self.refuse = False

    def open_document_text(self, path: Path) -> str | None:
        return self.docs.get(Path(path))

    async def apply_to_open_document(self, edit: FileEdit) -> bool:
        if self.refuse:
            return False
        self.applied.append(edit)
        self.docs[Path(edit.path)] = edit.new_text
        return True


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".plan-lsp" / "plans").mkdir(parents=True)
    (root / "src").mkdir()
    return root.resolve()


@pytest.fixture
def plans(ws: Path) -> Path:
    return ws / ".plan-lsp" / "plans"


async def _apply(
    ws: Path,
    plans: Path,
    path: Path,
    text: str,
    mode: WorkMode,
    editor: FakeEditor | None = None,
    old: str | None = None,
    plan_file: bool = False,
) -> tuple[bool, str]:
    result = await apply_file_edit(
        FileEdit(path=path, new_text=text, old_text=old),
        mode,
        plans,
        [ws],
        editor or FakeEditor(),
        plan_file=plan_file,
    )
    return result.applied, result.reason


@pytest.mark.parametrize(
    ("relative", "mode", "plan_file", "ok"),
    [
        ("src/a.py", WorkMode.BUILD, False, True),
        ("src/a.py", WorkMode.PLAN, False, False),
        ("new/deep/f.txt", WorkMode.BUILD, False, True),
        # workspace tools never change the server's own folder, in any mode
        (".plan-lsp/plans/PLAN.md", WorkMode.PLAN, False, False),
        (".plan-lsp/plans/PLAN.md", WorkMode.BUILD, False, False),
        (".plan-lsp/state.db", WorkMode.BUILD, False, False),
        (".plan-lsp/config.toml", WorkMode.BUILD, False, False),
        (".plan-lsp/revisions/PLAN.rev1.md", WorkMode.BUILD, False, False),
        (".plan-lsp/new.txt", WorkMode.BUILD, False, False),
        (".PLAN-LSP/config.toml", WorkMode.BUILD, False, False),  # case-insensitive disks
        # plan tools change plan files only
        (".plan-lsp/plans/PLAN.md", WorkMode.PLAN, True, True),
        (".plan-lsp/plans/sub/other.md", WorkMode.PLAN, True, True),
        (".plan-lsp/plans/notes.txt", WorkMode.PLAN, True, False),
        (".plan-lsp/plans/.hidden.md", WorkMode.PLAN, True, False),
        (".plan-lsp/plans/../state.db", WorkMode.PLAN, True, False),
        (".plan-lsp/plans/../../src/a.py", WorkMode.PLAN, True, False),
        ("src/a.py", WorkMode.BUILD, True, False),
        ("../outside.txt", WorkMode.BUILD, False, False),
        ("../outside.txt", WorkMode.PLAN, False, False),
    ],
)
async def test_where_edits_may_go(
    ws: Path, plans: Path, relative: str, mode: WorkMode, plan_file: bool, ok: bool
) -> None:
    target = ws / relative
    applied, reason = await _apply(ws, plans, target, "new\n", mode, plan_file=plan_file)
    assert applied is ok, reason
    assert target.resolve().exists() is ok
    if not ok:
        assert reason


async def test_server_dir_refusal_names_the_path(ws: Path, plans: Path) -> None:
    (ws / ".plan-lsp" / "config.toml").write_text("mode = 'plan'\n")
    for relative in (".plan-lsp/config.toml", ".plan-lsp/plans/PLAN.md"):
        applied, reason = await _apply(ws, plans, ws / relative, "x", WorkMode.BUILD)
        assert not applied
        assert relative in reason and "no tool may change it" in reason
    assert (ws / ".plan-lsp" / "config.toml").read_text() == "mode = 'plan'\n"


async def test_a_link_into_the_server_dir_is_refused(ws: Path, plans: Path) -> None:
    state = ws / ".plan-lsp" / "state.db"
    state.write_bytes(b"SQLite format 3\x00")
    (ws / "src" / "db").symlink_to(state)
    applied, reason = await _apply(ws, plans, ws / "src" / "db", "pwned", WorkMode.BUILD)
    assert not applied and ".plan-lsp/state.db" in reason
    assert state.read_bytes() == b"SQLite format 3\x00"


@pytest.mark.parametrize("target", ["../../src", "..", "OUTSIDE"])
async def test_plan_file_in_a_symlinked_plans_dir_is_refused(
    ws: Path, tmp_path: Path, target: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    plans = ws / ".plan-lsp" / "plans"
    plans.rmdir()
    plans.symlink_to(outside if target == "OUTSIDE" else Path(target), target_is_directory=True)
    applied, reason = await _apply(
        ws, plans, plans / "PLAN.md", "# plan\n", WorkMode.PLAN, plan_file=True
    )
    assert not applied and "symbolic link" in reason
    assert not (ws / "src" / "PLAN.md").exists()
    assert not (ws / ".plan-lsp" / "PLAN.md").exists()
    assert list(outside.iterdir()) == []


class SwappingEditor(FakeEditor):
    """Replaces a folder by a link between the gate's check and the write (TOCTOU)."""

    def __init__(self, folder: Path, link_to: Path) -> None:
        super().__init__()
        self.folder, self.link_to = folder, link_to

    def open_document_text(self, path: Path) -> str | None:
        if not self.folder.is_symlink():
            self.folder.rename(self.folder.with_name(self.folder.name + ".moved"))
            self.folder.symlink_to(self.link_to, target_is_directory=True)
        return None


async def test_a_link_appearing_after_the_check_is_refused_when_opening(
    ws: Path, plans: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "src" / "sub").mkdir()
    editor = SwappingEditor(ws / "src" / "sub", outside)
    applied, reason = await _apply(
        ws, plans, ws / "src" / "sub" / "a.py", "x", WorkMode.BUILD, editor
    )
    assert not applied and "src/sub is a symbolic link" in reason
    assert list(outside.iterdir()) == []
    # the same for the plans directory, between plan-name validation and the write
    editor = SwappingEditor(plans, ws / "src")
    applied, reason = await _apply(
        ws, plans, plans / "PLAN.md", "# plan\n", WorkMode.PLAN, editor, plan_file=True
    )
    assert not applied and ".plan-lsp/plans is a symbolic link" in reason
    assert not (ws / "src" / "PLAN.md").exists()


async def test_hard_linked_target_is_replaced_and_its_twin_kept(
    ws: Path, plans: Path, tmp_path: Path
) -> None:
    twin = tmp_path / "twin.txt"
    twin.write_text("original\n")
    os.link(twin, ws / "src" / "a.py")
    applied, _ = await _apply(
        ws, plans, ws / "src" / "a.py", "changed\n", WorkMode.BUILD, old="original\n"
    )
    assert applied
    assert (ws / "src" / "a.py").read_text() == "changed\n"
    assert twin.read_text() == "original\n" and twin.stat().st_nlink == 1


async def test_a_fifo_is_refused_without_blocking(ws: Path, plans: Path) -> None:
    os.mkfifo(ws / "src" / "pipe")
    applied, reason = await _apply(ws, plans, ws / "src" / "pipe", "x", WorkMode.BUILD)
    assert not applied and "FIFO" in reason


@pytest.mark.parametrize(("umask", "expected"), [(0o022, 0o644), (0o077, 0o600)])
async def test_new_files_follow_the_umask(ws: Path, plans: Path, umask: int, expected: int) -> None:
    previous = os.umask(umask)
    try:
        applied, _ = await _apply(ws, plans, ws / "src" / "new.py", "x", WorkMode.BUILD)
        plan_applied, _ = await _apply(
            ws, plans, plans / "PLAN.md", "# p\n", WorkMode.PLAN, plan_file=True
        )
    finally:
        os.umask(previous)
    assert applied and plan_applied
    assert (ws / "src" / "new.py").stat().st_mode & 0o777 == expected
    assert (plans / "PLAN.md").stat().st_mode & 0o777 == expected


async def test_plan_mode_refusal_names_the_plans_dir(ws: Path, plans: Path) -> None:
    applied, reason = await _apply(ws, plans, ws / "src" / "a.py", "x", WorkMode.PLAN)
    assert not applied
    assert "plan mode" in reason and str(plans) in reason


async def test_symlink_in_plans_dir_pointing_outside_is_refused(
    ws: Path, plans: Path, tmp_path: Path
) -> None:
    (plans / "evil.md").symlink_to(ws / "src" / "victim.py")
    (ws / "src" / "victim.py").write_text("keep\n")
    applied, reason = await _apply(ws, plans, plans / "evil.md", "pwned", WorkMode.PLAN)
    assert not applied and "plan mode" in reason
    assert (ws / "src" / "victim.py").read_text() == "keep\n"
    (ws / "src" / "out").symlink_to(tmp_path)
    applied, reason = await _apply(ws, plans, ws / "src" / "out" / "x", "y", WorkMode.BUILD)
    assert not applied and "outside the workspace" in reason
    assert not (tmp_path / "x").exists()


async def test_nul_byte_is_refused(ws: Path, plans: Path) -> None:
    applied, reason = await _apply(ws, plans, Path(str(ws) + "/a\x00b"), "x", WorkMode.BUILD)
    assert not applied and "NUL" in reason


async def test_open_document_goes_through_the_editor(ws: Path, plans: Path) -> None:
    path = ws / "src" / "a.py"
    path.write_text("disk\n")
    editor = FakeEditor()
    editor.docs[path] = "buffer\n"
    applied, _ = await _apply(ws, plans, path, "new\n", WorkMode.BUILD, editor, old="buffer\n")
    assert applied
    assert editor.docs[path] == "new\n"
    assert editor.applied[0].old_text == "buffer\n"
    assert path.read_text() == "disk\n"


async def test_editor_refusal_is_reported(ws: Path, plans: Path) -> None:
    path = ws / "src" / "a.py"
    editor = FakeEditor()
    editor.docs[path] = "buffer\n"
    editor.refuse = True
    applied, reason = await _apply(ws, plans, path, "new\n", WorkMode.BUILD, editor, old="buffer\n")
    assert not applied and "refused" in reason


async def test_stale_edit_is_rebased_onto_the_buffer(ws: Path, plans: Path) -> None:
    path = ws / "src" / "a.py"
    editor = FakeEditor()
    base = "one\ntwo\nthree\nfour\nfive\n"
    # The user changed line 1 after the agent computed its change to line 5.
    editor.docs[path] = "ONE (user)\ntwo\nthree\nfour\nfive\n"
    result = await apply_file_edit(
        FileEdit(path=path, new_text="one\ntwo\nthree\nfour\nFIVE\n", old_text=base),
        WorkMode.BUILD,
        plans,
        [ws],
        editor,
    )
    assert result.applied and result.rebased
    assert editor.docs[path] == "ONE (user)\ntwo\nthree\nfour\nFIVE\n"


async def test_conflicting_stale_edit_never_overwrites_the_user(ws: Path, plans: Path) -> None:
    path = ws / "src" / "a.py"
    editor = FakeEditor()
    editor.docs[path] = "one\nTWO typed by the user\nthree\n"
    result = await apply_file_edit(
        FileEdit(
            path=path, new_text="one\ntwo changed by agent\nthree\n", old_text="one\ntwo\nthree\n"
        ),
        WorkMode.BUILD,
        plans,
        [ws],
        editor,
    )
    assert not result.applied
    assert "read the file again" in result.reason
    assert editor.docs[path] == "one\nTWO typed by the user\nthree\n"
    assert editor.applied == []


async def test_whole_file_write_over_a_changed_buffer_is_refused(ws: Path, plans: Path) -> None:
    path = ws / "src" / "a.py"
    editor = FakeEditor()
    editor.docs[path] = "what the user typed\n"
    applied, _ = await _apply(
        ws, plans, path, "agent text\n", WorkMode.BUILD, editor, old="what the agent read\n"
    )
    assert not applied
    assert editor.docs[path] == "what the user typed\n"


async def test_stale_disk_edit_conflict(ws: Path, plans: Path) -> None:
    path = ws / "src" / "a.py"
    path.write_text("changed on disk\n")
    applied, _ = await _apply(ws, plans, path, "agent\n", WorkMode.BUILD, old="original\n")
    assert not applied
    assert path.read_text() == "changed on disk\n"
    # A file that appeared after the agent decided to create it is not clobbered.
    applied, _ = await _apply(ws, plans, path, "agent\n", WorkMode.BUILD, old=None)
    assert not applied


async def test_disk_write_is_atomic_and_keeps_permissions(ws: Path, plans: Path) -> None:
    path = ws / "src" / "run.sh"
    path.write_text("#!/bin/sh\n")
    os.chmod(path, 0o755)
    applied, _ = await _apply(
        ws, plans, path, "#!/bin/sh\necho hi\r\n", WorkMode.BUILD, old="#!/bin/sh\n"
    )
    assert applied
    assert path.read_bytes() == b"#!/bin/sh\necho hi\r\n"
    assert os.stat(path).st_mode & 0o777 == 0o755
    assert sorted(p.name for p in path.parent.iterdir()) == ["run.sh"]


async def test_creates_parent_directories(ws: Path, plans: Path) -> None:
    applied, _ = await _apply(ws, plans, ws / "new" / "deep" / "f.txt", "x", WorkMode.BUILD)
    assert applied and (ws / "new" / "deep" / "f.txt").read_text() == "x"


async def test_directory_is_refused(ws: Path, plans: Path) -> None:
    applied, reason = await _apply(ws, plans, ws / "src", "x", WorkMode.BUILD)
    assert not applied and "directory" in reason


@pytest.mark.parametrize(
    ("base", "new", "current", "expected"),
    [
        ("a\n", "b\n", "a\n", "b\n"),
        (None, "b\n", None, "b\n"),
        ("a\nb\nc\nd\n", "a\nb\nc\nD\n", "A\nb\nc\nd\n", "A\nb\nc\nD\n"),
        ("a\nb\n", "a\nb\n", "x\n", "x\n"),
        ("a\n", "b\n", "b\n", "b\n"),
    ],
)
def test_rebase(base: str | None, new: str, current: str | None, expected: str) -> None:
    assert rebase_edit(base, new, current)[0] == expected


@pytest.mark.parametrize(
    ("base", "new", "current"),
    [
        ("a\nb\n", "a\nB\n", "a\nb2\n"),
        ("a\nb\n", "a\nB\n", "a2\nb\n"),  # adjacent lines are a conflict too
        (None, "new\n", "appeared\n"),
        ("a\n", "b\n", None),
    ],
)
def test_rebase_conflicts(base: str | None, new: str, current: str | None) -> None:
    with pytest.raises(StaleEdit):
        rebase_edit(base, new, current)
