"""Real Emacs (Debian's emacs-nox 28.2) with eglot 1.9 and with lsp-mode 8.0, configured as
docs/editors.md's "Emacs" section says, against the real server with the scripted provider.

Per client, two sessions, PLAN.md open before the prompt or not. The plan (multi-line
Markdown, emoji) and its revision stream at a model's pace (`model_speed.MODEL_PACE`): every
change of PLAN.md's buffer is recorded (`after-change-functions`, with `float-time`), and
each plan that streamed into the open buffer grew there visibly, everything the model
streamed showing up (`model_speed.stream_report`; the longest stall is printed, not
asserted). PLAN.md not open: no buffer holds it during the first run (neither client has
window/showDocument), a message names it, and the user opens it after the run. Then a review
note and the code action "Reject with feedback from review notes" start the revision,
"Compare with previous revision" answers, the user types a line into PLAN.md and approves
right away (code action in eglot, code lens in lsp-mode; the server has Emacs save the
modified buffer while Emacs waits for the approval's answer): the approved text and its
sha256 are what the buffer held. The Do edit reaches hello.py's buffer within seconds of the
approval (nothing lost or left unread behind the answer to the approving request) and its
file. The Do run marks the plan's steps with todo_write as it goes (in progress, then
completed; its last todo_write, right before its final text, completes every step): when
Emacs handles the log line that says the run finished, PLAN.md's buffer and file both hold
the full checklist and the buffer is saved; afterwards buffer and file are one text, no file
changed behind its buffer, and Emacs asked the user nothing ("changed on disk", edit
confirmations, ...).

The configurations declare `experimental.planLsp.saveDocuments`, so Emacs saves the buffers
the server changed (`planLsp/saveDocument`): right after the Do run hello.py's and PLAN.md's
buffers are unmodified, and none of the user's save hooks ran for those saves. Then the user
saves each (C-x C-s) and opens PLAN.md again (C-x C-f): no question ("changed since visited
or saved", "changed on disk"), and every file holds its buffer's text. No warning shows
(the `planLsp/update` notifications that come with the capability are ignored quietly).

Emacs runs as a daemon under `timeout -s KILL` with a fresh HOME whose init.el is the
docs/editors.md configuration (tests/e2e/emacs/*-init.el); tests/e2e/emacs/driver.el drives it and
writes what it saw as JSON. Install with tests/e2e/emacs/install.sh (scripts/setup.sh)."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.model_speed import LONG_PLAN, LONG_REVISED_PLAN, stream_report, write_paced_script
from tests.e2e.scripts import sample_project
from tests.needs import need

REPO = Path(__file__).resolve().parents[2]
EMACS_DIR = Path(__file__).resolve().parent / "emacs"
EMACS_KILL_AFTER_S = 150
CLIENTS = {
    "eglot": ("eglot-init.el", "eglot-client.el"),
    "lsp-mode": ("lsp-mode-init.el", "lsp-client.el"),
}
_daemon_names = itertools.count()

# The plans stream at a model's pace (model_speed.MODEL_PACE); emoji lines keep lsp-mode 8's
# columns (characters, not UTF-16 units) in play.
EMOJI_NOTE = "- Keep 👍🏽 and 👨‍👩‍👧 exactly as they are: the 🚀 edition 🎉.\n"
PLAN_V1 = LONG_PLAN.replace("## Notes\n\n", "## Notes\n\n" + EMOJI_NOTE, 1)
PLAN_V2 = LONG_REVISED_PLAN.replace("## Notes\n\n", "## Notes\n\n" + EMOJI_NOTE, 1)
FEEDBACK = "say that every other file stays as it is"
# What the user types into the plan just before approving it.
USER_LINE = "- Also: keep the file's trailing newline ✍.\n"
APPROVED = PLAN_V2 + USER_LINE
REJECT_ACTION = "Reject with feedback from review notes (> feedback: …)"
APPROVE = "Approve (auto-accept edits)"
HELLO_AFTER = "print('hello, world')\n"
# The Do run's todos: the plan's numbered steps, as the model words them.
STEPS = tuple(
    m.group(1).replace("`", "") for m in re.finditer(r"^\d+\. (.+)$", PLAN_V2, re.MULTILINE)
)
DO_EDIT_WITHIN_S = 10
# A plan that streamed into an open buffer showed at least this many growing states.
GROWING_STATES_AT_LEAST = 5


def session_turns() -> list[dict[str, Any]]:
    """The plan, its revision after the review note, and the Do run."""

    def plan(text: str) -> list[dict[str, Any]]:
        return [
            {"tool_calls": [{"name": "plan_write", "arguments": {"content": text}}]},
            {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        ]

    do = {
        "name": "edit_file",
        "arguments": {
            "path": "hello.py",
            "old_text": "print('hi')",
            "new_text": HELLO_AFTER.strip(),
        },
    }
    return plan(PLAN_V1) + plan(PLAN_V2) + do_turns(do)


def todos(done: int) -> dict[str, Any]:
    """A todo_write of the plan's steps: the first `done` completed, the next in progress."""

    def status(n: int) -> str:
        return "completed" if n < done else "in_progress" if n == done else "pending"

    items = [{"content": step, "status": status(n)} for n, step in enumerate(STEPS)]
    return {"name": "todo_write", "arguments": {"todos": items}}


def do_turns(edit: dict[str, Any]) -> list[dict[str, Any]]:
    """The Do run marks each step in progress, then completed, as it goes; its last
    todo_write marks every step completed right before its final text."""
    return [
        {"tool_calls": [todos(0)]},
        {"tool_calls": [edit]},
        {"tool_calls": [todos(2)]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {"tool_calls": [todos(4)]},
        {"tool_calls": [todos(len(STEPS))]},
        {"text": "Done."},
    ]


def checked(plan: str) -> str:
    """`plan` with every numbered step ticked, as the Do run leaves it."""
    return re.sub(r"^(\d+)\. ", r"\1. [x] ", plan, flags=re.MULTILINE)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def emacs_binary() -> str:
    found = shutil.which("emacs")
    missing = [c for c in ("eglot", "lsp-mode") if not _elpa_has(c)]
    if found is None or missing:
        reason = f"emacs or {missing} missing; run tests/e2e/emacs/install.sh"
        need(False, reason)
    assert found is not None
    return found


def _elpa_has(name: str) -> bool:
    return any(Path("/usr/share/emacs/site-lisp/elpa").glob(f"{name}-[0-9]*"))


def server_wrapper(bin_dir: Path, script: Path, transcript: Path, log: Path) -> None:
    """`plan-lsp` on PATH, as an installed server is, running the scripted provider."""
    bin_dir.mkdir(parents=True)
    wrapper = bin_dir / "plan-lsp"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'exec {sys.executable} -m plan_lsp "$@" --provider scripted --script {script} '
        f"--transcript {transcript} --plan-shell classified --log-file {log}\n"
    )
    wrapper.chmod(0o755)


def run_emacs(client: str, tmp_path: Path, plan_open_before: bool) -> dict[str, Any]:
    ws = sample_project(tmp_path / "ws")
    subprocess.run(["git", "init", "-q", str(ws)], check=True, timeout=30)
    plan_path = ws / ".plan-lsp" / "plans" / "PLAN.md"
    if plan_open_before:
        plan_path.parent.mkdir(parents=True)
        plan_path.write_text("")
    timeline = tmp_path / "timeline.jsonl"
    script = write_paced_script(tmp_path / "script.json", session_turns(), timeline)
    params = {
        "plan_open_before": plan_open_before,
        "prompt": "Make the greeting polite",
        "feedback": FEEDBACK,
        "plan_v1": PLAN_V1,
        "plan_v2": PLAN_V2,
        "reject_action": REJECT_ACTION,
        "approve_title": APPROVE,
        "hello_after": HELLO_AFTER,
        "user_line": USER_LINE,
    }
    result = launch_emacs(client, tmp_path, ws, script, params)
    result["_timeline"] = timeline
    result["_script"] = script
    return result


def launch_emacs(
    client: str,
    tmp_path: Path,
    ws: Path,
    script: Path,
    params: dict[str, Any],
    session_file: Path | None = None,
) -> dict[str, Any]:
    """An Emacs daemon with `client`'s docs/editors.md configuration on `ws`, the server on
    the scripted `script`; driver.el runs the session (`session_file`'s, when given) with
    `params` and writes what it saw, returned with the files as they are afterwards."""
    emacs = emacs_binary()
    init_file, client_file = CLIENTS[client]
    plan_path = ws / ".plan-lsp" / "plans" / "PLAN.md"
    server_log = tmp_path / "server.log"
    server_wrapper(tmp_path / "bin", script, tmp_path / "transcript.jsonl", server_log)
    home = tmp_path / "home"
    (home / ".emacs.d").mkdir(parents=True)
    shutil.copy(EMACS_DIR / init_file, home / ".emacs.d" / "init.el")
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    result_path = tmp_path / "result.json"
    params = {
        **params,
        "session_file": None if session_file is None else str(session_file),
        "workspace": str(ws),
        "plan_path": str(plan_path),
        "result_path": str(result_path),
        "client_log_path": str(tmp_path / "client.log"),
    }
    params_path = tmp_path / "params.json"
    params_path.write_text(json.dumps(params))
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{tmp_path / 'bin'}:{os.environ.get('PATH', '')}",
        "XDG_RUNTIME_DIR": str(run_dir),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "PLAN_LSP_E2E_PARAMS": str(params_path),
        "LANG": "C.UTF-8",
    }
    name = f"plan-e2e-{os.getpid()}-{next(_daemon_names)}"
    started = time.monotonic()
    proc = subprocess.run(
        ["timeout", "-s", "KILL", str(EMACS_KILL_AFTER_S), emacs, f"--fg-daemon={name}",
         "-l", str(EMACS_DIR / client_file), "-l", str(EMACS_DIR / "driver.el")],
        cwd=ws, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        timeout=EMACS_KILL_AFTER_S + 30,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    (tmp_path / "emacs.stderr").write_text(proc.stderr)
    diagnostics = (
        f"exit {proc.returncode} after {elapsed:.1f}s\nstderr:\n{proc.stderr[-4000:]}\n"
        f"server log:\n{server_log.read_text()[-3000:] if server_log.exists() else '(none)'}"
    )
    assert result_path.exists(), f"Emacs wrote no result\n{diagnostics}"
    result: dict[str, Any] = json.loads(result_path.read_text(encoding="utf-8"))
    result["_diagnostics"] = diagnostics
    result["_stderr"] = proc.stderr
    result["plan_path"] = str(plan_path)
    result["_plan_disk"] = plan_path.read_text(encoding="utf-8") if plan_path.exists() else None
    result["_hello_disk"] = (ws / "hello.py").read_text(encoding="utf-8")
    result["_returncode"] = proc.returncode
    result["_transcript"] = tmp_path / "transcript.jsonl"
    return result


def problems_of(result: dict[str, Any], client: str, plan_open_before: bool) -> list[str]:
    """Every way the session fell short of the promise, so one run reports them all."""
    out: list[str] = []

    def same(key: str, expected: str, what: str) -> None:
        actual = result.get(key)
        if actual != expected:
            twice = isinstance(actual, str) and actual.count(expected.splitlines()[0]) > 1
            out.append(
                f"{what}{' (the plan appears twice)' if twice else ''}:\n"
                f"    expected {expected!r}\n    actual   {actual!r}"
            )

    if result.get("ok") is not True:
        out.append(
            f"the session stopped early: {result.get('error')} (steps {result.get('steps')})"
        )
    if result.get("lenses_seen"):
        out.append(f"lenses lsp-mode showed: {result['lenses_seen']}")
    prompts = result.get("prompts") or []
    if prompts:
        distinct = sorted(set(prompts), key=prompts.index)
        out.append(f"Emacs asked the user {len(prompts)} times: {distinct}")
    warnings = result.get("warnings") or []
    if warnings:
        distinct = sorted(set(warnings), key=warnings.index)
        out.append(f"Emacs showed {len(warnings)} warnings: {distinct}")
    if result.get("revision_error"):
        out.append(result["revision_error"])
    if result.get("prompt_stop") != "plan_submitted":
        out.append(f"the planning run ended with {result.get('prompt_stop')!r}")
    # Neither client has window/showDocument. eglot 1.9 asks before any edit to a file it
    # does not visit; lsp-mode would load it into a hidden buffer it does not manage (with
    # lsp-deferred), stale once the plan is on disk. So the server names the plan file
    # (window/showMessage) and the user opens it after the run.
    if not plan_open_before:
        if result.get("plan_buffer_exists_v1") is not False:
            out.append("a PLAN.md buffer existed before the user opened the file")
        if f"plan-lsp is writing the plan to {result.get('plan_path')}" not in result.get(
            "_stderr", ""
        ):
            out.append("Emacs showed no message naming the plan file")
    final = APPROVED
    same("plan_buffer_v1", PLAN_V1, "PLAN.md buffer after the stream")
    # At a model's pace, each plan that streamed into an open buffer grew there visibly, and
    # every character the model streamed showed up.
    report = result.get("_stream_report")
    if report is not None:
        streamed_open = [PLAN_V1, PLAN_V2] if plan_open_before else [PLAN_V2]
        for plan in streamed_open:
            growing = report.growing_states.get(plan[:40], 0)
            if growing < GROWING_STATES_AT_LEAST:
                out.append(f"{plan[:40]!r} showed {growing} growing states in the buffer")
            if report.never_shown.get(plan[:40]):
                out.append(f"{plan[:40]!r} never showed all it streamed: {report}")
    if "rejected" in result.get("steps", []):
        same("plan_buffer_v2", PLAN_V2, "PLAN.md buffer after the revision")
        if REJECT_ACTION not in (result.get("code_action_titles") or []):
            out.append(f"no reject code action among {result.get('code_action_titles')}")
    if "compared" in result.get("steps", []) and result.get("compare") != "answered":
        out.append(
            f"planLsp.showPreviousRevision did not answer: {result.get('compare')} "
            f"after {result.get('compare_seconds', 0):.1f}s"
        )
    if "approved" in result.get("steps", []):
        state = result.get("state_after_do") or {}
        # The server gives up on an unanswered applyEdit after 30 s; well below that, a slow
        # edit is one the client lost or left unread behind the approval's answer.
        if result.get("do_edit_seconds", 0) > DO_EDIT_WITHIN_S:
            out.append(
                f"the Do edit reached hello.py's buffer {result['do_edit_seconds']:.1f}s "
                "after the approval"
            )
        same("hello_buffer", HELLO_AFTER, "hello.py buffer after the Do run")
        if result.get("_hello_disk") != HELLO_AFTER:
            out.append(
                f"the Do edit is not on disk (buffer modified: {result.get('hello_modified')}): "
                f"{result.get('_hello_disk')!r}"
            )
        # What was approved is what the buffer held, the user's line included.
        same("plan_buffer_approved", final, "PLAN.md buffer when approved")
        if state.get("approvedText") != final or state.get("approvedSha256") != sha(final):
            out.append(
                f"approved text:\n    expected {final!r} ({sha(final)})\n"
                f"    actual   {state.get('approvedText')!r} ({state.get('approvedSha256')})"
            )
        # The Do run ticked every step: the buffer and the file hold the full checklist
        # when the client learns that the run ended, not some time later.
        same("plan_buffer_after_do", checked(final), "PLAN.md buffer after the Do run")
        end = result.get("do_run_end") or {}
        for key, what in (("buffer", "PLAN.md buffer"), ("disk", "PLAN.md on disk")):
            if end.get(key) != checked(final):
                out.append(
                    f"{what} when the client saw the Do run end ({end.get('line')!r}):\n"
                    f"    expected {checked(final)!r}\n    actual   {end.get(key)!r}"
                )
        if end.get("modified") is not False:
            out.append(f"PLAN.md's buffer is modified when the Do run ended: {end}")
        # ... and still after the run: buffer and file one text, no change on disk behind
        # the buffer (Emacs would ask at the next edit or save).
        after = result.get("plan_buffer_after_do")
        if not isinstance(after, str) or sha(after) != sha(result.get("plan_disk_after_do") or ""):
            out.append(
                f"PLAN.md buffer and file differ after the Do run:\n    buffer {after!r}\n"
                f"    file   {result.get('plan_disk_after_do')!r}"
            )
        if result.get("plan_modtime_ok") is not True:
            out.append("PLAN.md changed on disk behind its buffer after the Do run")
        # The server asked Emacs to save each buffer it changed (planLsp/saveDocument), so
        # none is left modified with a stale visited-file modtime.
        for key, name in (("hello_modified", "hello.py"), ("plan_modified", "PLAN.md")):
            if result.get(key) is not False:
                out.append(f"{name}'s buffer is not saved after the Do run: {result.get(key)}")
        if result.get("save_hook_runs"):
            out.append(f"the saves ran the user's save hooks in {result['save_hook_runs']}")
        if state.get("mode") != "plan" or state.get("planStatus") != "approved":
            out.append(f"state after the Do run: {state}")
    if "saved" in result.get("steps", []):
        # C-x C-s in each buffer the agent changed, then C-x C-f PLAN.md: no question (the
        # prompts above), and every file holds exactly its buffer's text.
        for name, seen in (result.get("after_save") or {}).items():
            if seen.get("modified") is not False or seen.get("buffer") != seen.get("disk"):
                out.append(f"{name} after C-x C-s and C-x C-f PLAN.md: {seen}")
    if result.get("_returncode") != 0 and result.get("ok") is True:
        out.append(f"Emacs exited {result.get('_returncode')}")
    return out


def only_streamed_into_buffer(timeline: Path, out: Path) -> Path:
    """`timeline` without the deltas of the first plan's plan_write."""
    turns = session_turns()

    def first_plan(event: dict[str, Any]) -> bool:
        calls = turns[event["turn"] - 1].get("tool_calls") or []
        index = event.get("call")
        call = calls[index] if isinstance(index, int) and index < len(calls) else {}
        return bool(call.get("arguments", {}).get("content") == PLAN_V1)

    lines = timeline.read_text().splitlines()
    out.write_text("".join(line + "\n" for line in lines if not first_plan(json.loads(line))))
    return out


def last_marks_to_end(result: dict[str, Any]) -> float:
    """Seconds from the model's last todo_write (its last delta) to Emacs handling the log
    line that says the Do run finished: what the run's end waits for the marks (reported,
    never asserted)."""
    turn = len(session_turns()) - 1  # 1-based: the todo_write right before the final text
    times = [
        event["t"]
        for line in Path(result["_timeline"]).read_text().splitlines()
        if (event := json.loads(line))["turn"] == turn
    ]
    end = (result.get("do_run_end") or {}).get("t")
    return float(end) - max(times) if times and end is not None else float("nan")


@pytest.mark.parametrize("plan_open_before", [True, False], ids=["plan-open", "plan-not-open"])
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_emacs_plan_session(client: str, plan_open_before: bool, tmp_path: Path) -> None:
    result = run_emacs(client, tmp_path, plan_open_before)
    events = [(float(t), str(text)) for t, text in result.get("buffer_events") or []]
    timeline = result["_timeline"]
    if not plan_open_before:
        # The first plan streamed to disk only (no buffer to watch until the user opened it
        # after the run): what the user saw stream is the revision.
        timeline = only_streamed_into_buffer(timeline, tmp_path / "timeline-revision.jsonl")
    result["_stream_report"] = report = stream_report(events, timeline, result["_script"])
    print(f"stream report ({client}): {report}")
    print(f"Do run end seen {last_marks_to_end(result):.2f} s after the model's last todo_write")
    problems = problems_of(result, client, plan_open_before)
    assert not problems, (
        f"{client}, PLAN.md {'open' if plan_open_before else 'not open'} before the prompt:\n- "
        + "\n- ".join(problems)
        + f"\nsteps: {result.get('steps')}\n{result['_diagnostics']}"
    )


def test_readme_shows_the_tested_configurations() -> None:
    readme = (REPO / "docs" / "editors.md").read_text(encoding="utf-8")
    for init_file, _ in CLIENTS.values():
        config = (EMACS_DIR / init_file).read_text(encoding="utf-8").strip()
        assert config in readme, f"docs/editors.md's Emacs section lacks {init_file} as tested"
