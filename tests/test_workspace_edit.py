"""Workspace-edit gate: where files may change, open buffers, stale edits, atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plan_lsp.policy.ports import FileEdit
from plan_lsp.policy.workspace_edit import StaleEdit, apply_file_edit, rebase_edit
from plan_lsp.session.model import WorkMode


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
) -> tuple[bool, str]:
    result = await apply_file_edit(
        FileEdit(path=path, new_text=text, old_text=old), mode, plans, [ws], editor or FakeEditor()
    )
    return result.applied, result.reason


@pytest.mark.parametrize(
    ("relative", "mode", "ok"),
    [
        ("src/a.py", WorkMode.BUILD, True),
        ("src/a.py", WorkMode.PLAN, False),
        (".plan-lsp/plans/PLAN.md", WorkMode.PLAN, True),
        (".plan-lsp/plans/PLAN.md", WorkMode.BUILD, True),
        (".plan-lsp/plans/sub/other.md", WorkMode.PLAN, True),
        (".plan-lsp/plans/../state.db", WorkMode.PLAN, False),
        (".plan-lsp/plans/../../src/a.py", WorkMode.PLAN, False),
        ("../outside.txt", WorkMode.BUILD, False),
        ("../outside.txt", WorkMode.PLAN, False),
    ],
)
async def test_where_edits_may_go(
    ws: Path, plans: Path, relative: str, mode: WorkMode, ok: bool
) -> None:
    target = ws / relative
    applied, reason = await _apply(ws, plans, target, "new\n", mode)
    assert applied is ok
    assert target.resolve().exists() is ok
    if not ok:
        assert reason


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
