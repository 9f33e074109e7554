"""Revert a Do run to before one of its steps from the step's lens, and redo, through the real
server: a 4-step run with an edit, a new file, a `bash` write, a `bash` rename and a deletion.
The workspace goes back byte for byte, the user's own edit of another file made meanwhile
survives, the user's `.git` is not touched, and redo brings back the end state. Then the plan
no longer claims to be done: the lens and the plan list say which steps are open and why."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

from pygls.uris import to_fs_path

from tests.e2e.scripts import sample_project, scripted_args, write_script
from tests.e2e.test_step_mode import call, lenses, plan_path, run_ended, step_line, todos_after
from tests.lsp_harness import running_server

PLAN = (
    "# Plan: a polite greeting\n\n"
    "1. Change the greeting in `hello.py` to `hello`.\n"
    "2. Add `notes.txt` with one line.\n"
    "3. Log the build to `build.log` with bash.\n"
    "4. Rename `build.log` to `done.log` and remove `README.md`.\n"
)
STEPS = (
    "Change the greeting in hello.py",
    "Add notes.txt with one line",
    "Log the build to build.log with bash",
    "Rename build.log to done.log and remove README.md",
)


def todos(done: int, running: bool = True) -> dict[str, Any]:
    return todos_after(STEPS, done, running)


TURNS: list[dict[str, Any]] = [
    call("plan_write", content=PLAN),
    call("exit_plan_mode"),
    todos(0),
    call("edit_file", path="hello.py", old_text="print('hi')", new_text="print('hello')"),
    todos(1),
    call("write_file", path="notes.txt", content="one\n"),
    call("edit_file", path="hello.py", old_text="'hello'", new_text="'hello there'"),
    todos(2),
    call("bash", command="printf 'built\\n' > build.log && chmod +x build.log"),
    todos(3),
    call("bash", command="mv build.log done.log && rm README.md"),
    todos(4, running=False),
    {"text": "All four steps are done."},
]


def tree(root: Path) -> dict[str, str]:
    """Every file and link of the workspace (not `.git`, not the server's `.plan-lsp`), with
    the sha256 of its bytes and its mode."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in (".git", ".plan-lsp") or path.is_dir():
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        out[str(rel)] = f"{digest} {path.lstat().st_mode:o}"
    return out


def git_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in (root / ".git").rglob("*")
            if p.is_file()}  # fmt: skip


def git(ws: Path, *args: str) -> None:
    who = {f"GIT_{role}_{key}": value for role in ("AUTHOR", "COMMITTER")
           for key, value in (("NAME", "u"), ("EMAIL", "u@x"))}  # fmt: skip
    env = {**who, "PATH": "/usr/bin:/bin", "HOME": str(ws.parent)}
    subprocess.run(["git", *args], cwd=ws, env=env, check=True, capture_output=True)


async def test_revert_to_before_a_step_from_its_lens_and_redo(tmp_path: Path) -> None:
    ws = sample_project(tmp_path / "ws")
    (ws / "lib.py").write_text("x = 1\n")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "start")
    plan_path(ws).parent.mkdir(parents=True)
    plan_path(ws).write_text("")
    script = write_script(tmp_path / "script.json", TURNS)
    args = scripted_args(script, tmp_path / "t.jsonl")
    async with running_server([ws], *args, permission_requests=True) as ed:
        ed.ed.answer_permission = lambda _p: "allow_once"
        path = plan_path(ws)
        ed.open(path)
        ed.open(ws / "hello.py")
        assert (await ed.request("planLsp/prompt", {"text": "be polite"}))[
            "stopReason"
        ] == "plan_submitted"
        before_step_2 = tree(ws)  # but for step 1's change, below
        mark = len(ed.ed.updates)
        await ed.request("planLsp/approvePlan", {"permissionMode": "auto_edit"})
        await run_ended(ed, mark, "end_turn")
        assert (ws / "done.log").read_text() == "built\n" and not (ws / "README.md").exists()
        end = tree(ws)
        git_before = git_bytes(ws)
        steps = (await ed.request("planLsp/steps", {}))["steps"]
        assert [s["state"] for s in steps] == ["done"] * 4, steps
        assert [f["path"] for f in steps[2]["files"]] == ["build.log"], steps[2]
        # Before step 2: step 1's greeting; the user edits another file meanwhile.
        step_1 = hashlib.sha256(b"print('hello')\n").hexdigest()
        before_step_2["hello.py"] = f"{step_1} {before_step_2['hello.py'].split()[1]}"
        (ws / "lib.py").write_text("x = 2  # mine\n")
        before_step_2["lib.py"] = tree(ws)["lib.py"]

        found = await lenses(ed, path)
        revert = [c for line, t, c in found
                  if line == step_line(2, PLAN) and t == "Revert to before this step"]  # fmt: skip
        assert len(revert) == 1, found
        result = await ed.command(*revert[0])
        assert result["stepsReverted"] == [2, 3, 4], result
        assert tree(ws) == before_step_2
        assert (ws / "lib.py").read_text() == "x = 2  # mine\n"
        assert git_bytes(ws) == git_before
        assert ed.buffer_text(ws / "hello.py") == "print('hello')\n"
        for buf in ed.ed.buffers.values():
            fs = Path(to_fs_path(buf.uri) or "")
            assert buf.text == fs.read_text(), fs

        # The plan is no longer done: the steps say which are open and why.
        steps = (await ed.request("planLsp/steps", {}))["steps"]
        assert [s["state"] for s in steps] == ["done", "reverted", "reverted", "reverted"]
        found = await lenses(ed, path)
        top = [t for line, t, _ in found if line == 0]
        partly = "Plan approved ✓ — carried out partly: steps 2, 3 and 4 open (2 reverted; "
        assert any(t.startswith(partly) for t in top), top
        assert not any("done" in t.lower() and "partly" not in t for t in top), top
        assert "Run the rest" in top, top
        (listed,) = [p for p in (await ed.request("planLsp/plans", {}))["plans"] if p["current"]]
        assert listed["status"] == "approved", listed
        assert listed["carriedOut"] == partly.removeprefix("Plan approved ✓ — ") + (
            "3 reverted; 4 reverted)"
        ), listed

        redone = await ed.request("planLsp/redo", {})
        assert redone["stepsReverted"] == [2, 3, 4], redone
        assert tree(ws) == {**end, "lib.py": before_step_2["lib.py"]}
        assert git_bytes(ws) == git_before
        assert ed.buffer_text(ws / "hello.py") == "print('hello there')\n"
        steps = (await ed.request("planLsp/steps", {}))["steps"]
        assert [s["state"] for s in steps] == ["done"] * 4, steps
        top = [t for line, t, _ in await lenses(ed, path) if line == 0]
        assert "Plan approved ✓ — done" in top, top
        (listed,) = [p for p in (await ed.request("planLsp/plans", {}))["plans"] if p["current"]]
        assert (listed["status"], listed["carriedOut"]) == ("done", None), listed


async def test_a_run_that_ends_early_is_not_done_and_says_why(tmp_path: Path) -> None:
    """Step 1: the user refuses an edit of notes.txt, then `bash` writes it — undone at once
    and reported; the run ends with step 2 in progress and steps 3, 4 never started."""
    turns: list[dict[str, Any]] = [
        *TURNS[:3],
        call("write_file", path="notes.txt", content="one\n"),
        call("bash", command="echo one > notes.txt"),
        todos(1),
        {"text": "I stop here."},
    ]
    ws = sample_project(tmp_path / "ws")
    plan_path(ws).parent.mkdir(parents=True)
    plan_path(ws).write_text("")
    args = scripted_args(write_script(tmp_path / "script.json", turns), tmp_path / "t.jsonl")
    async with running_server([ws], *args, permission_requests=True) as ed:
        ed.ed.answer_permission = lambda p: "reject_once" if p["tool"] != "bash" else "allow_once"
        ed.open(plan_path(ws))
        await ed.request("planLsp/prompt", {"text": "be polite"})
        mark = len(ed.ed.updates)
        await ed.request("planLsp/approvePlan", {"permissionMode": "ask"})
        await run_ended(ed, mark, "end_turn")
        assert not (ws / "notes.txt").exists()
        denied = [u for u in ed.ed.updates[mark:]
                  if u["kind"] == "checkpoint" and u["action"] == "denied"]  # fmt: skip
        assert len(denied) == 1 and "notes.txt" in denied[0]["message"], denied
        top = [t for line, t, _ in await lenses(ed, plan_path(ws)) if line == 0]
        expected = (
            "Plan approved ✓ — carried out partly: steps 1, 2, 3 and 4 open (1 denied: bash "
            "changed notes.txt, which the user refused to let change in this step; the change "
            "was undone; 2 failed: the run ended (end_turn) while it was in progress; "
            "3 not reached; 4 not reached)"
        )
        assert expected in top, top
