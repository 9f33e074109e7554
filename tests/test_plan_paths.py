"""Plan path validation: the model's plan name is untrusted."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from plan_lsp.policy import plan_paths as pp
from plan_lsp.policy.plan_paths import validate_plan_path, write_plan_file
from plan_lsp.policy.server_dir import ACCESS_DENIED_PLANS_DIR_LINK
from tests.fs_trees import build_tree, clean_chain, snapshot, tree_ops


@pytest.fixture
def plans(tmp_path: Path) -> Path:
    plans_dir = tmp_path / "ws" / ".plan-lsp" / "plans"
    plans_dir.mkdir(parents=True)
    (plans_dir / "PLAN.md").write_text("# Plan\n1. step\n")
    (plans_dir / "empty.md").write_text("")
    (plans_dir / "blank.md").write_text("  \n\n")
    (plans_dir / "sub").mkdir()
    (plans_dir / "sub" / "x.md").write_text("# Sub plan\n")
    (plans_dir / "folder.md").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n")
    (plans_dir / "link-out.md").symlink_to(outside / "secret.md")
    (plans_dir / "dangling-out.md").symlink_to(outside / "missing.md")
    (plans_dir / "outdir").symlink_to(outside, target_is_directory=True)
    (plans_dir / "link-in.md").symlink_to(plans_dir / "PLAN.md")
    (plans_dir / "link-to-txt.md").symlink_to(plans_dir / "notes.txt")
    (plans_dir / "notes.txt").write_text("notes\n")
    (plans_dir / "loop.md").symlink_to(plans_dir / "loop.md")
    (plans_dir / "sublink").symlink_to("sub", target_is_directory=True)
    os.mkfifo(plans_dir / "fifo.md")
    return plans_dir


def message(template: str, name: str) -> str:
    return template.format(name=name)


# (name, must_exist, expected error template or None when accepted)
CASES: list[tuple[str | None, bool, str | None]] = [
    (None, True, None),
    ("PLAN.md", True, None),
    ("PLAN.md", False, None),
    ("new.md", False, None),
    ("sub/x.md", True, None),
    ("sub/new.md", False, None),
    ("newdir/deeper/new.md", False, None),
    ("link-in.md", True, pp.ACCESS_DENIED_SYMLINK),  # a link, even to a plan inside
    ("sublink/x.md", True, pp.ACCESS_DENIED_SYMLINK),
    ("sublink/new.md", False, pp.ACCESS_DENIED_SYMLINK),
    ("PLAN.md/x.md", False, pp.ACCESS_DENIED_NOT_A_FOLDER),
    ("fifo.md", False, pp.PLAN_NOT_A_FILE),
    ("fifo.md", True, pp.PLAN_NOT_A_FILE),
    ("new.md", True, pp.PLAN_DOES_NOT_EXIST),
    ("empty.md", True, pp.PLAN_IS_EMPTY),
    ("blank.md", True, pp.PLAN_IS_EMPTY),
    ("empty.md", False, None),
    ("folder.md", False, pp.PLAN_NOT_A_FILE),
    ("folder.md", True, pp.PLAN_NOT_A_FILE),
    ("", False, pp.ACCESS_DENIED_EMPTY_NAME),
    ("../PLAN.md", False, pp.ACCESS_DENIED_TRAVERSAL),
    ("sub/../../x.md", False, pp.ACCESS_DENIED_TRAVERSAL),
    ("/etc/passwd.md", False, pp.ACCESS_DENIED_ABSOLUTE),
    ("~/notes.md", False, pp.ACCESS_DENIED_ABSOLUTE),
    ("C:/plans/x.md", False, pp.ACCESS_DENIED_DRIVE),
    ("C:x.md", False, pp.ACCESS_DENIED_DRIVE),
    ("PLAN.md:stream", False, pp.ACCESS_DENIED_DRIVE),
    ("sub\\x.md", False, pp.ACCESS_DENIED_BACKSLASH),
    ("..\\x.md", False, pp.ACCESS_DENIED_BACKSLASH),
    ("PLAN.txt", False, pp.ACCESS_DENIED_NOT_MARKDOWN),
    ("PLAN", False, pp.ACCESS_DENIED_NOT_MARKDOWN),
    ("PLAN.md.sh", False, pp.ACCESS_DENIED_NOT_MARKDOWN),
    ("sub", False, pp.ACCESS_DENIED_NOT_MARKDOWN),
    (".md", False, pp.ACCESS_DENIED_HIDDEN),
    (".hidden.md", False, pp.ACCESS_DENIED_HIDDEN),
    (".git/x.md", False, pp.ACCESS_DENIED_HIDDEN),
    ("./PLAN.md", False, pp.ACCESS_DENIED_HIDDEN),
    ("sub//x.md", False, pp.ACCESS_DENIED_BAD_PART),
    ("sub/", False, pp.ACCESS_DENIED_BAD_PART),
    (" PLAN.md", False, pp.ACCESS_DENIED_BAD_PART),
    ("NUL.md", False, pp.ACCESS_DENIED_RESERVED),
    ("sub/com1.md", False, pp.ACCESS_DENIED_RESERVED),
    ("a" * 126 + ".md", False, pp.ACCESS_DENIED_TOO_LONG),
    ("a" * 125 + ".md", False, None),
    ("/".join(["a" * 100] * 3) + ".md", False, pp.ACCESS_DENIED_TOO_LONG),
    ("PLAN\x00.md", False, pp.ACCESS_DENIED_CONTROL),
    ("PLAN\n.md", False, pp.ACCESS_DENIED_CONTROL),
    ("PLAN\x7f.md", False, pp.ACCESS_DENIED_CONTROL),
    ("PLAN\u200b.md", False, pp.ACCESS_DENIED_CONTROL),  # zero-width space
    ("\u202edm.NALP", False, pp.ACCESS_DENIED_CONTROL),  # right-to-left override
    ("PLAN\ud800.md", False, pp.ACCESS_DENIED_CONTROL),  # unpaired surrogate
    ("PLAN\u2028.md", False, pp.ACCESS_DENIED_CONTROL),
    ("\uff0e\uff0e/x.md", False, pp.ACCESS_DENIED_NORMALISATION),  # fullwidth dots
    ("sub\uff0fx.md", False, pp.ACCESS_DENIED_NORMALISATION),  # fullwidth solidus
    ("ﬁle.md", False, pp.ACCESS_DENIED_NORMALISATION),  # ligature
    ("cafe\u0301.md", False, pp.ACCESS_DENIED_NORMALISATION),  # decomposed é
    ("café.md", False, None),
    ("計画.md", False, None),
    ("link-out.md", False, pp.ACCESS_DENIED_OUTSIDE),
    ("link-out.md", True, pp.ACCESS_DENIED_OUTSIDE),
    ("dangling-out.md", False, pp.ACCESS_DENIED_OUTSIDE),
    ("outdir/secret.md", True, pp.ACCESS_DENIED_OUTSIDE),
    ("outdir/new.md", False, pp.ACCESS_DENIED_OUTSIDE),
    ("link-to-txt.md", False, pp.ACCESS_DENIED_SYMLINK),
    ("loop.md", False, pp.ACCESS_DENIED_UNRESOLVABLE),
]


@pytest.mark.parametrize(("name", "must_exist", "expected"), CASES)
def test_validate_plan_path_table(
    plans: Path, name: str | None, must_exist: bool, expected: str | None
) -> None:
    result = validate_plan_path(plans, name, must_exist=must_exist)
    if expected is None:
        assert result.ok, result.error
        assert result.error is None
        assert result.resolved is not None
        resolved = Path(result.resolved)
        assert resolved.is_absolute()
        assert resolved.is_relative_to(plans.resolve())
    else:
        assert not result.ok
        assert result.resolved is None
        shown = pp.shown_name(name if name is not None else "PLAN.md")
        assert result.error == message(expected, shown)


def test_name_refusals_all_start_with_access_denied() -> None:
    templates = [value for key, value in vars(pp).items() if key.startswith("ACCESS_DENIED_")]
    assert len(templates) >= 10
    assert all(template.startswith("Access denied: ") for template in templates)


def test_default_name_and_resolution(plans: Path) -> None:
    result = validate_plan_path(plans, None, must_exist=True)
    assert result.resolved == str((plans / "PLAN.md").resolve())
    linked = validate_plan_path(plans, "link-in.md", must_exist=True)
    assert linked.error == (
        "Access denied: link-in.md is (or lies under) a symbolic link; plans are regular "
        "files in real folders of the plans directory (remove the link or choose another name)"
    )


def test_fixed_messages_read_as_documented(plans: Path) -> None:
    assert validate_plan_path(plans, "link-out.md", must_exist=True).error == (
        "Access denied: link-out.md is outside the plans directory"
    )
    assert validate_plan_path(plans, "nope.md", must_exist=True).error == "nope.md does not exist"
    assert validate_plan_path(plans, "empty.md", must_exist=True).error == "empty.md is empty"


def test_messages_escape_invisible_characters(plans: Path) -> None:
    error = validate_plan_path(plans, "a\x00b\n.md", must_exist=False).error
    assert error == "Access denied: a\\x00b\\x0a.md contains control or invisible characters"


@pytest.mark.parametrize("link_at", [".plan-lsp", ".plan-lsp/plans"])
@pytest.mark.parametrize("inside_workspace", [True, False])
def test_a_symlinked_plans_dir_is_refused(
    tmp_path: Path, link_at: str, inside_workspace: bool
) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".plan-lsp").mkdir(parents=True)
    elsewhere = (workspace / "docs") if inside_workspace else (tmp_path / "elsewhere")
    (elsewhere / "plans").mkdir(parents=True)
    link = workspace / link_at
    if link.exists():
        link.rmdir()
    link.symlink_to(elsewhere if link_at == ".plan-lsp" else elsewhere / "plans")
    for ws in (workspace, None):
        result = validate_plan_path(
            workspace / ".plan-lsp" / "plans", "PLAN.md", must_exist=False, workspace=ws
        )
        assert not result.ok and result.resolved is None
        assert result.error == ACCESS_DENIED_PLANS_DIR_LINK.format(
            problem=f"{link_at} is a symbolic link; the server never follows links where it writes"
        )


@pytest.mark.parametrize(
    "plans_dir",
    [".", "docs/plans", ".plan-lsp", ".plan-lsp/revisions", ".plan-lsp/revisions/x",
     ".plan-lsp/plans/../../src", "/elsewhere/.plan-lsp/plans"],
)  # fmt: skip
def test_a_plans_dir_outside_the_server_dir_is_refused(tmp_path: Path, plans_dir: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result = validate_plan_path(workspace / plans_dir, None, must_exist=False, workspace=workspace)
    assert not result.ok
    assert result.error is not None
    assert result.error.startswith("Access denied: the plans directory ")
    assert "is not a folder inside" in result.error and str(workspace) in result.error


def test_plans_dir_in_a_subfolder_of_the_server_dir(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    plans_dir = workspace / ".plan-lsp" / "team" / "plans"
    result = validate_plan_path(plans_dir, "a/b.md", must_exist=False, workspace=workspace)
    assert result.ok and result.resolved == str(workspace.resolve() / ".plan-lsp/team/plans/a/b.md")


def test_plans_dir_need_not_exist_yet(tmp_path: Path) -> None:
    plans_dir = tmp_path / "ws" / ".plan-lsp" / "plans"
    result = validate_plan_path(plans_dir, None, must_exist=False)
    assert result.ok
    assert result.resolved == str(plans_dir.resolve() / "PLAN.md")
    missing = validate_plan_path(plans_dir, None, must_exist=True)
    assert missing.error == "PLAN.md does not exist"


# -- property: whatever is accepted stays inside the plans directory ------------------------

_PIECES = st.sampled_from(
    ["a", "B", "é", "計", "-", "_", " ", ".", "..", "/", "\\", ":", "~", "\x00", "\n",
     "\u200b", "\uff0e", "\uff0f", "e\u0301", ".md", "sub", "outdir", "link-out",
     "dangling-out", "link-in", "PLAN", "nul", "C:"]
)  # fmt: skip


@pytest.fixture(scope="module")
def shared_plans(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("prop")
    plans_dir = root / "ws" / ".plan-lsp" / "plans"
    (plans_dir / "sub").mkdir(parents=True)
    outside = root / "outside"
    outside.mkdir()
    (plans_dir / "outdir").symlink_to(outside, target_is_directory=True)
    (plans_dir / "link-out.md").symlink_to(outside / "x.md")
    (plans_dir / "dangling-out.md").symlink_to(root / "nowhere.md")
    (plans_dir / "PLAN.md").write_text("# Plan\n")
    (plans_dir / "link-in.md").symlink_to(plans_dir / "PLAN.md")
    yield plans_dir


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(_PIECES, max_size=12), md=st.booleans(), must_exist=st.booleans())
def test_accepted_names_resolve_inside_plans_dir(
    shared_plans: Path, pieces: list[str], md: bool, must_exist: bool
) -> None:
    name = "".join(pieces) + (".md" if md else "")
    result = validate_plan_path(shared_plans, name, must_exist=must_exist)
    if result.ok:
        assert result.resolved is not None
        resolved = Path(result.resolved)
        root = shared_plans.resolve()
        assert resolved != root
        assert resolved.is_relative_to(root)
        assert Path(os.path.realpath(resolved)) == resolved  # nothing left to follow
        assert resolved.name.endswith(".md")
        assert ".." not in name.split("/")
    else:
        assert result.resolved is None
        assert result.error


# -- property: plan names on random trees of folders, files and links ------------------------

_PLAN_NAMES = ["a", "b.md", "PLAN.md"]
_PLANS_KINDS = ["dir", "dir", "link:..", "link:../..", "link:../../a", "link:@out", "link:plans2"]


@settings(deadline=None)
@given(
    ops=tree_ops(names=_PLAN_NAMES, wheres=["ws", "out", "ws/.plan-lsp", "ws/.plan-lsp/plans"]),
    plans_kind=st.sampled_from(_PLANS_KINDS),
    parts=st.lists(st.sampled_from(_PLAN_NAMES), min_size=1, max_size=3),
)
def test_plan_names_on_random_trees_never_lead_through_a_link(
    ops: list[tuple[object, ...]], plans_kind: str, parts: list[str]
) -> None:
    root = Path(tempfile.mkdtemp(prefix="planpaths-"))
    previous = os.umask(0o022)
    try:
        ws = root / "ws"
        (ws / ".plan-lsp").mkdir(parents=True)
        (root / "out").mkdir()
        (ws / ".plan-lsp" / "plans2").mkdir()
        plans = ws / ".plan-lsp" / "plans"
        if plans_kind == "dir":
            plans.mkdir()
        else:
            target = plans_kind.removeprefix("link:")
            plans.symlink_to(root / "out" if target == "@out" else Path(target))
        build_tree(root, ops)
        before = snapshot(root)
        name = "/".join(parts)
        result = validate_plan_path(plans, name, must_exist=False, workspace=ws)
        expected = clean_chain(ws, [".plan-lsp", "plans", *parts]) and name.endswith(".md")
        assert result.ok == expected, result.error
        event(f"ok={result.ok}")
        if result.ok:
            assert result.resolved == str(ws.resolve() / ".plan-lsp" / "plans" / name)
        try:
            write_plan_file(plans, plans / name, "NEW", workspace=ws)
            written = True
        except OSError:
            written = False
        assert written == result.ok
        goal = f"ws/.plan-lsp/plans/{name}"
        on_the_way = {f"ws/.plan-lsp/plans/{'/'.join(parts[:i])}" for i in range(1, len(parts))}
        after = snapshot(root)
        for key in set(before) | set(after):
            if before.get(key) != after.get(key):
                assert key == goal or (key in on_the_way and key not in before), key
    finally:
        os.umask(previous)
        shutil.rmtree(root, ignore_errors=True)
