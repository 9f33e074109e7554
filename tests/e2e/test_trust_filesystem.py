"""A hostile repository and a prompt-injected model against the filesystem, through the real
server with the scripted model: symlinked plans, revisions and server folders, symlinked and
hard-linked PLAN.md, file modes, names that fail validation, and tools writing into
`.plan-lsp/`. Every test snapshots the workspace and a folder outside it and checks that
nothing but the expected files changed.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.scripts import PLAN_TEXT, requests_of, scripted_session
from tests.lsp_harness import Editor

RUN_SH = b"#!/bin/sh\necho build\n"
NOTES = b"# Notes shipped by the repository\n"
# The server's own file in the workspace: the .gitignore it writes with `.plan-lsp/` (its
# session state lives in the user's state folder, never here).
STATE_FILES = {".plan-lsp/.gitignore"}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def plan_write(content: str = PLAN_TEXT, name: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"content": content}
    if name is not None:
        args["plan_filename"] = name
    return call("plan_write", **args)


def turns_of(*calls: dict[str, Any]) -> list[dict[str, Any]]:
    """One model turn per call, then a turn that ends the run."""
    return [{"tool_calls": [c]} for c in calls] + [{"text": "Stopping here."}]


def hostile_workspace(ws: Path) -> Path:
    """Adds what the attacks aim at: an executable script and a notes file, and a folder
    outside the workspace."""
    (ws / "src").mkdir()
    (ws / "src" / "run.sh").write_bytes(RUN_SH)
    (ws / "src" / "run.sh").chmod(0o755)
    (ws / "src" / "notes.md").write_bytes(NOTES)
    outside = ws.parent / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("outside the workspace\n")
    return outside


def tree(root: Path) -> dict[str, tuple[Any, ...]]:
    """Everything under `root` as (kind, content or link target, mode), links not followed."""
    found: dict[str, tuple[Any, ...]] = {}
    for directory, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            path = Path(directory) / name
            rel = path.relative_to(root).as_posix()
            if rel in STATE_FILES:
                continue
            st = path.lstat()
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                found[rel] = ("file", path.read_bytes(), mode)
            else:
                found[rel] = ("dir" if stat.S_ISDIR(st.st_mode) else "other", mode)
    return found


def results_of(ed: Editor, tool: str) -> list[dict[str, Any]]:
    return [u for u in ed.updates_of("toolResult") if u["tool"] == tool]


async def one_plan_write(ed: Editor) -> dict[str, Any]:
    """Prompt once; the result of the run's only plan_write call."""
    await ed.request("planLsp/prompt", {"text": "plan it"})
    [result] = results_of(ed, "plan_write")
    return result


def tool_messages(transcript: Path) -> list[str]:
    """What the model was told about its tool calls, over the whole session."""
    last = requests_of(transcript)[-1]["messages"]
    return [str(m.get("content")) for m in last if m.get("role") == "tool"]


@asynccontextmanager
async def started(
    server: AbstractAsyncContextManager[Editor], mask: int = 0o022
) -> AsyncIterator[Editor]:
    """Start the server with umask `mask` (a child inherits its parent's umask; the test
    process creates nothing while it is set) and stop it at the end."""
    previous = os.umask(mask)
    try:
        ed = await server.__aenter__()
    finally:
        os.umask(previous)
    try:
        yield ed
    except BaseException:
        if not await server.__aexit__(*sys.exc_info()):
            raise
    else:
        await server.__aexit__(None, None, None)


# -- a plans directory outside .plan-lsp/ ------------------------------------------------------


@pytest.mark.parametrize(
    "plans_dir", [".", "src", "../outside", ".plan-lsp", ".plan-lsp/revisions"]
)
async def test_a_plans_dir_outside_the_server_folder_is_refused(
    tmp_path: Path, plans_dir: str
) -> None:
    """Even from a trusted source (initializationOptions), a plans folder outside `.plan-lsp/`
    is refused (the configuration says so and keeps the default; `server_dir`'s own check is
    unit-tested in tests/test_server_dir.py), and the plan lands in `.plan-lsp/plans`."""
    ws, _t, server = scripted_session(
        tmp_path, turns_of(plan_write()), init_options={"plansDir": plans_dir}
    )
    outside = hostile_workspace(ws)
    before, before_outside = tree(ws), tree(outside)
    async with started(server) as ed:
        warnings = " ".join((await ed.state())["configWarnings"])
        assert "plans_dir" in warnings
        result = await one_plan_write(ed)
        assert not result["isError"], result
        assert (ws / ".plan-lsp" / "plans" / "PLAN.md").is_file()
    after = tree(ws)
    assert {k: v for k, v in after.items() if not k.startswith(".plan-lsp")} == {
        k: v for k, v in before.items() if not k.startswith(".plan-lsp")
    }
    server_files = {k for k in after if k.startswith(".plan-lsp/")}
    expected = {".plan-lsp/plans", ".plan-lsp/plans/PLAN.md"}
    assert server_files == expected
    assert tree(outside) == before_outside


# -- symlinked plans directory and server folder -------------------------------------------


@pytest.mark.parametrize("target", ["../src", "..", "../..", "OUTSIDE"])
async def test_plan_write_refuses_a_symlinked_plans_dir(tmp_path: Path, target: str) -> None:
    ws, transcript, server = scripted_session(tmp_path, turns_of(plan_write()))
    outside = hostile_workspace(ws)
    (ws / ".plan-lsp").mkdir()
    (ws / ".plan-lsp" / "plans").symlink_to(outside if target == "OUTSIDE" else Path(target))
    before, before_outside = tree(ws), tree(outside)
    async with started(server) as ed:
        result = await one_plan_write(ed)
        assert result["isError"]
        assert ".plan-lsp/plans is a symbolic link" in result["content"]
        assert (await ed.state())["planStatus"] == "none"
    assert tree(ws) == before and tree(outside) == before_outside
    assert any(".plan-lsp/plans is a symbolic link" in m for m in tool_messages(transcript))


@pytest.mark.parametrize("target", ["src", "OUTSIDE"])
async def test_a_symlinked_server_folder_gets_nothing_written_through_it(
    tmp_path: Path, target: str
) -> None:
    ws, _t, server = scripted_session(tmp_path, turns_of(plan_write()))
    outside = hostile_workspace(ws)
    (ws / ".plan-lsp").symlink_to(outside if target == "OUTSIDE" else ws / "src")
    before, before_outside = tree(ws), tree(outside)
    async with started(server) as ed:
        result = await one_plan_write(ed)
        assert result["isError"] and ".plan-lsp is a symbolic link" in result["content"]
    # the plan did not go where the link points (and the state never goes to the workspace)
    assert tree(ws) == before and tree(outside) == before_outside


async def test_a_state_database_linked_to_a_repository_file_is_not_written(
    tmp_path: Path,
) -> None:
    ws, _t, server = scripted_session(tmp_path, turns_of(plan_write()))
    hostile_workspace(ws)
    (ws / "src" / "__init__.py").write_bytes(b"")
    (ws / ".plan-lsp").mkdir()
    (ws / ".plan-lsp" / "state.db").symlink_to("../src/__init__.py")
    async with started(server) as ed:
        await ed.request("planLsp/prompt", {"text": "plan it"})
        assert (await ed.state())["planStatus"] == "drafting"
    # a workspace's .plan-lsp/state.db is never read, and never written through its link
    assert (ws / "src" / "__init__.py").read_bytes() == b""
    assert (ws / ".plan-lsp" / "state.db").is_symlink()


# -- revisions -------------------------------------------------------------------------------


REVISED = "# Plan v2\n\n1. Change `hello.py` only.\n"


def revise_turns() -> list[dict[str, Any]]:
    return [
        {"tool_calls": [plan_write()]},
        {"tool_calls": [call("exit_plan_mode")]},
        {"tool_calls": [plan_write(REVISED)]},
        {"tool_calls": [call("exit_plan_mode")]},
    ]


async def reject_and_revise(ed: Editor) -> None:
    first = await ed.request("planLsp/prompt", {"text": "plan it"})
    assert first["stopReason"] == "plan_submitted"
    await ed.request("planLsp/rejectPlan", {"feedback": "shorter please"})
    await ed.wait_update(lambda u: u["kind"] == "done" and u["runId"] != first["runId"])
    assert (await ed.state())["planStatus"] == "submitted"


@pytest.mark.parametrize("link", ["revisions/PLAN.rev1.md", "revisions"])
async def test_a_symlink_in_revisions_never_changes_its_target(tmp_path: Path, link: str) -> None:
    ws, _t, server = scripted_session(tmp_path, revise_turns())
    hostile_workspace(ws)
    (ws / ".plan-lsp" / "revisions").mkdir(parents=True)
    if link == "revisions":
        (ws / ".plan-lsp" / "revisions").rmdir()
        (ws / ".plan-lsp" / "revisions").symlink_to("../src")
    else:
        (ws / ".plan-lsp" / link).symlink_to("../../src/run.sh")
    before_src = tree(ws / "src")
    async with started(server) as ed:
        await reject_and_revise(ed)
        with pytest.raises(JsonRpcException, match="is a symbolic link") as request:
            await ed.request("planLsp/planRevisions", {})
        with pytest.raises(JsonRpcException, match="is a symbolic link") as command:
            await ed.command("planLsp.showPreviousRevision", {})
    # A refusal a person reads: RequestFailed naming the file and why, no Python in it.
    for refused in (request.value, command.value):
        assert refused.code == -32803, (refused.code, refused.message)
        assert not re.search(r"[A-Z][a-z]+[A-Z]\w*|Error|Traceback", refused.message), refused
        assert refused.data is None
        assert "revisions" in refused.message
    assert tree(ws / "src") == before_src
    run = ws / "src" / "run.sh"
    assert run.read_bytes() == RUN_SH and stat.S_IMODE(run.stat().st_mode) == 0o755


async def test_revisions_are_read_only_copies(tmp_path: Path) -> None:
    ws, _t, server = scripted_session(tmp_path, revise_turns())
    async with started(server, 0o022) as ed:
        await reject_and_revise(ed)
        revs = await ed.request("planLsp/planRevisions", {})
    path = ws.resolve() / ".plan-lsp" / "revisions" / "PLAN.rev1.md"
    assert revs["previousUri"] == path.as_uri()
    assert path.read_text() == PLAN_TEXT and stat.S_IMODE(path.stat().st_mode) == 0o444


# -- PLAN.md as a symlink or a hard link ------------------------------------------------------


def plans_of(ws: Path) -> Path:
    return ws / ".plan-lsp" / "plans"


async def test_a_symlinked_plan_md_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    ws, _t, server = scripted_session(tmp_path, turns_of(plan_write()))
    hostile_workspace(ws)
    plans_of(ws).mkdir(parents=True)
    (plans_of(ws) / "PLAN.md").symlink_to("../../src/notes.md")
    before = tree(ws)
    async with started(server) as ed:
        result = await one_plan_write(ed)
        assert result["isError"]
        assert "Access denied: PLAN.md is outside the plans directory" in result["content"]
        assert not ed.ed.shown_documents  # no draft was opened on the link
    assert tree(ws) == before


async def test_a_plan_md_swapped_for_a_link_before_approval_is_not_approved(
    tmp_path: Path,
) -> None:
    turns = [{"tool_calls": [plan_write()]}, {"tool_calls": [call("exit_plan_mode")]}]
    ws, _t, server = scripted_session(tmp_path, turns)
    hostile_workspace(ws)
    async with started(server) as ed:
        await ed.request("planLsp/prompt", {"text": "plan it"})
        plan = plans_of(ws) / "PLAN.md"
        assert plan.read_text() == PLAN_TEXT
        plan.unlink()
        plan.symlink_to(ws / "src" / "notes.md")  # another program swaps it
        with pytest.raises(JsonRpcException, match="the plan cannot be saved"):
            await ed.command("planLsp.approvePlan", {"execute": False})
        state = await ed.state()
        assert state["planStatus"] == "submitted" and state["mode"] == "plan"
        assert state["approvedPlan"] is None
    assert (ws / "src" / "notes.md").read_bytes() == NOTES


async def test_a_hard_linked_plan_md_is_left_alone_and_its_twin_kept(tmp_path: Path) -> None:
    """A PLAN.md the repository hard-linked to one of its files is not the round's plan file
    (an editor saving it in place would write the twin): the plan goes to PLAN-2.md. A link
    made after that, before the approval, is replaced by the approved text, the twin kept."""
    turns = [{"tool_calls": [plan_write()]}, {"tool_calls": [call("exit_plan_mode")]}]
    ws, _t, server = scripted_session(tmp_path, turns)
    hostile_workspace(ws)
    plans_of(ws).mkdir(parents=True)
    notes = ws / "src" / "notes.md"
    os.link(notes, plans_of(ws) / "PLAN.md")
    async with started(server) as ed:
        await ed.request("planLsp/prompt", {"text": "plan it"})
        plan = plans_of(ws) / "PLAN-2.md"
        assert plan.read_text() == PLAN_TEXT
        assert (plans_of(ws) / "PLAN.md").read_bytes() == NOTES
        assert notes.read_bytes() == NOTES
        os.unlink(plans_of(ws) / "PLAN.md")
        os.unlink(plan)
        os.link(notes, plan)  # linked again before approval
        edited = PLAN_TEXT + "3. Added by the user.\n"
        ed.type_into(plan, edited)
        state = await ed.command("planLsp.approvePlan", {"execute": False})
        assert state["planStatus"] == "approved"
        assert plan.read_text() == edited
    assert notes.read_bytes() == NOTES and notes.stat().st_nlink == 1


# -- modes of the files the server creates ----------------------------------------------------


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o077, 0o600)])
async def test_created_files_follow_the_umask_and_existing_ones_keep_their_mode(
    tmp_path: Path, mask: int, expected: int
) -> None:
    turns = [
        {"tool_calls": [plan_write()]},
        {"tool_calls": [call("exit_plan_mode")]},
        {
            "tool_calls": [
                call("write_file", path="src/new.py", content="print('new')\n"),
                call("edit_file", path="src/run.sh", old_text="build", new_text="built"),
            ]
        },
        {"text": "Done."},
    ]
    ws, _t, server = scripted_session(tmp_path, turns)
    hostile_workspace(ws)
    async with started(server, mask) as ed:
        first = await ed.request("planLsp/prompt", {"text": "plan it"})
        await ed.command("planLsp.approvePlan", {"permissionMode": "auto_edit"})
        await ed.wait_update(lambda u: u["kind"] == "done" and u["runId"] != first["runId"])
    src = ws / "src"
    assert (src / "new.py").read_text() == "print('new')\n"
    assert (src / "run.sh").read_bytes() == b"#!/bin/sh\necho built\n"
    assert stat.S_IMODE((src / "new.py").stat().st_mode) == expected
    assert stat.S_IMODE((src / "run.sh").stat().st_mode) == 0o755
    plan = plans_of(ws) / "PLAN.md"
    assert stat.S_IMODE(plan.stat().st_mode) == expected
    assert stat.S_IMODE(plans_of(ws).stat().st_mode) == 0o777 & ~mask


# -- nothing before validation ---------------------------------------------------------------


async def test_an_invalid_plan_name_leaves_no_file_behind(tmp_path: Path) -> None:
    turns = turns_of(
        plan_write(name="../escape.md"),
        plan_write(name="notes.txt"),
        plan_write(name=".hidden.md"),
    )
    ws, transcript, server = scripted_session(tmp_path, turns)
    outside = hostile_workspace(ws)
    before, before_outside = tree(ws), tree(outside)
    async with started(server) as ed:
        await ed.request("planLsp/prompt", {"text": "plan it"})
        results = results_of(ed, "plan_write")
        assert [r["isError"] for r in results] == [True, True, True]
        assert all(r["content"].count("Access denied") == 1 for r in results)
        # the draft streamed into the editor's buffer only, and was put back
        assert ed.buffer_text(plans_of(ws) / "PLAN.md") == ""
    after = tree(ws)
    assert not (plans_of(ws) / "PLAN.md").exists()
    assert {k: v for k, v in after.items() if not k.startswith(".plan-lsp")} == before
    assert [k for k in after if k.startswith(".plan-lsp/plans/")] == []
    assert tree(outside) == before_outside
    assert len([m for m in tool_messages(transcript) if "Access denied" in m]) == 3


async def test_a_plan_under_another_name_creates_only_that_file(tmp_path: Path) -> None:
    ws, _t, server = scripted_session(tmp_path, turns_of(plan_write(name="feature.md")))
    async with started(server) as ed:
        await ed.request("planLsp/prompt", {"text": "plan it"})
        assert not results_of(ed, "plan_write")[0]["isError"]
    assert sorted(p.name for p in plans_of(ws).iterdir()) == ["feature.md"]


# -- tools never write inside .plan-lsp/ ------------------------------------------------------


SERVER_TARGETS = [
    ".plan-lsp/config.toml",
    ".plan-lsp/state.db",
    ".plan-lsp/plans/PLAN.md",
    ".plan-lsp/revisions/PLAN.rev1.md",
    ".plan-lsp/hooks.sh",
]


async def test_build_mode_tools_cannot_write_inside_the_server_folder(tmp_path: Path) -> None:
    calls = [call("write_file", path=p, content="pwned\n") for p in SERVER_TARGETS]
    calls += [
        call("edit_file", path=".plan-lsp/config.toml", old_text="info", new_text="debug"),
        call("write_file", path="src/state-link", content="pwned\n"),
        call("write_file", path="src/ok.txt", content="fine\n"),
    ]
    ws, _t, server = scripted_session(tmp_path, [{"tool_calls": calls}, {"text": "done"}])
    hostile_workspace(ws)
    (ws / ".plan-lsp").mkdir()
    (ws / ".plan-lsp" / "config.toml").write_text('log_level = "info"\n')
    (ws / "src" / "state-link").symlink_to("../.plan-lsp/state.db")
    async with started(server) as ed:
        await ed.request("planLsp/setMode", {"mode": "build"})
        await ed.request("planLsp/setPermissionMode", {"permissionMode": "auto_edit"})
        ed.ed.answer_message = lambda p: "Allow always"
        before = {k: v for k, v in tree(ws).items() if k.startswith(".plan-lsp")}
        await ed.request("planLsp/prompt", {"text": "change the server's files"})
        results = results_of(ed, "write_file") + results_of(ed, "edit_file")
        refused = [r["content"] for r in results if r["isError"]]
        assert len(refused) == 7, results
        for target in [*SERVER_TARGETS, ".plan-lsp/state.db"]:
            reason = f"{target} is inside .plan-lsp/, the server's own folder"
            assert any(reason in r and "no tool may change it" in r for r in refused), target
        after = {k: v for k, v in tree(ws).items() if k.startswith(".plan-lsp")}
        assert after == before
        assert (await ed.state())["mode"] == "build"  # the state database still works
    assert (ws / "src" / "ok.txt").read_text() == "fine\n"
    assert (ws / ".plan-lsp" / "config.toml").read_text() == 'log_level = "info"\n'
