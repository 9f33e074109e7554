"""Real Vim (Debian's vim-nox 9.0) with the coc.nvim release build, configured as docs/editors.md's
"Vim + coc.nvim" section says (coc's defaults plus its `languageserver` entry, read from the
page itself), against the real server with the scripted provider streaming at a model's
speed (`MODEL_PACE`).

Vim runs in a terminal (tmux); tests/e2e/vim/driver.vim drives it from inside on a timer and
writes what it saw as JSON, while this side captures the terminal's screen. The session: a
prompt (`planLsp/prompt` through `CocRequestAsync`) while the user is in hello.py; the plan
streams into PLAN.md, which the server has coc show in a window without taking focus; the
user goes to PLAN.md, writes a review note and picks "Reject with feedback from review notes"
from coc's default code-action menu (`<Plug>(coc-codeaction-cursor)`); the revised plan
streams; the user types one line and picks "Approve (auto-accept edits)" from the same menu;
the Do run edits hello.py and ticks the plan's checklist; the user saves with `:wa` (coc saves
no buffer after a workspace edit) and runs `:checktime`. A second session starts with the
user in the empty PLAN.md they opened (hello.py left, so unloaded): the plans stream into the
current buffer, and the Do edit goes to hello.py's file (no buffer holds it).

Asserted: every plan grew in the buffer as it streamed; the approved text is exactly what the
buffer showed (the user's line included), by sha256; after `:wa` the disk holds what the
buffers show (the final checklist in PLAN.md, the Do edit in hello.py) and no buffer is
modified; Vim asked nothing (no W11/W12/W13, no "changed since reading it") on the screen or
in `:messages`; the plan was in a window while the user stayed in theirs; no `Use ':wa'` hint
is left on the screen. Install with tests/e2e/vim/install.sh (scripts/setup.sh)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.plan.checklist import mirror_todos
from tests.e2e.model_speed import LONG_PLAN, LONG_REVISED_PLAN, stream_report, write_paced_script
from tests.e2e.scripts import sample_project
from tests.needs import need

REPO = Path(__file__).resolve().parents[2]
VIM_DIR = Path(__file__).resolve().parent / "vim"
E2E = VIM_DIR / ".e2e"
COC_DIR = E2E / "coc.nvim"
# A hard ceiling: a wedged editor is killed, never waited for.
VIM_KILL_AFTER_S = 150
STEP_TIMEOUT_S = 40

PROMPT = "Make the greeting polite"
FEEDBACK_LINE = "> feedback: say that every other file stays as it is"
USER_LINE = "- Also: keep the file's trailing newline."
REJECT = "Reject with feedback from review notes (> feedback: …)"
APPROVE = "Approve (auto-accept edits)"
HELLO_AFTER = "print('hello, world')\n"
STEPS = (
    "Read `hello.py` and confirm the greeting is printed once, at import time.",
    "Change the greeting in `hello.py` from `hi` to `hello, world`.",
)
# What Vim says when a file changed behind a buffer, or before writing over such a file.
QUESTIONS = re.compile(r"W1[123]:|changed since (reading|editing)|has been created after")


def todos(*statuses: str) -> dict[str, Any]:
    items = [{"content": c, "status": s} for c, s in zip(STEPS, statuses, strict=True)]
    return {"name": "todo_write", "arguments": {"todos": items}}


def session_turns() -> list[dict[str, Any]]:
    def plan(text: str) -> list[dict[str, Any]]:
        return [
            {"tool_calls": [{"name": "plan_write", "arguments": {"content": text}}]},
            {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        ]

    edit = {
        "name": "edit_file",
        "arguments": {
            "path": "hello.py",
            "old_text": "print('hi')",
            "new_text": HELLO_AFTER.strip(),
        },
    }
    do: list[dict[str, Any]] = [
        {"tool_calls": [todos("in_progress", "pending")]},
        {"tool_calls": [todos("completed", "in_progress")]},
        {"tool_calls": [edit]},
        {"tool_calls": [todos("completed", "completed")]},
        {"text": "Done."},
    ]
    return plan(LONG_PLAN) + plan(LONG_REVISED_PLAN) + do


def readme_coc_settings() -> str:
    """The `coc-settings.json` docs/editors.md's "Vim + coc.nvim" section shows, as written."""
    readme = (REPO / "docs" / "editors.md").read_text(encoding="utf-8")
    section = readme.split("\n## Vim + coc.nvim\n", 1)
    assert len(section) == 2, 'docs/editors.md has no "Vim + coc.nvim" section'
    block = re.search(r"```json\n(.*?)```", section[1], re.S)
    assert block is not None, "the Vim + coc.nvim section shows no coc-settings.json"
    settings = block.group(1)
    assert "languageserver" in json.loads(settings)
    return settings


def coc_installed() -> tuple[str, str]:
    vim = shutil.which("vim.nox") or shutil.which("vim")
    tmux = shutil.which("tmux")
    need(vim is not None and tmux is not None, "vim-nox or tmux missing: tests/e2e/vim/install.sh")
    need(
        (COC_DIR / "build" / "index.js").is_file(),
        "coc.nvim is not unpacked: run tests/e2e/vim/install.sh with the coc.nvim release "
        "tarball (PLAN_LSP_COC_TARBALL)",
    )
    assert vim is not None and tmux is not None
    return vim, tmux


class Screen:
    """The terminal Vim runs in, read every 0.2 s: every distinct screen is kept."""

    def __init__(self, tmux: list[str]) -> None:
        self.tmux = tmux
        self.screens: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def capture(self) -> str | None:
        proc = subprocess.run(
            [*self.tmux, "capture-pane", "-p", "-t", "vim"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return proc.stdout if proc.returncode == 0 else None

    def _poll(self) -> None:
        while not self._stop.wait(0.2):
            screen = self.capture()
            if screen is not None and (not self.screens or self.screens[-1] != screen):
                self.screens.append(screen)

    def __enter__(self) -> Screen:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def run_vim(tmp_path: Path, plan_open_before: bool) -> dict[str, Any]:
    ws = sample_project(tmp_path / "ws")
    subprocess.run(["git", "init", "-q", str(ws)], check=True, timeout=30)
    plan_path = ws / ".plan-lsp" / "plans" / "PLAN.md"
    if plan_open_before:
        plan_path.parent.mkdir(parents=True)
        plan_path.write_text("")
    timeline = tmp_path / "timeline.jsonl"
    script = write_paced_script(tmp_path / "script.json", session_turns(), timeline)
    params = {
        "plan_path": str(plan_path),
        "hello_path": str(ws / "hello.py"),
        "prompt": PROMPT,
        "feedback_line": FEEDBACK_LINE,
        "user_line": USER_LINE,
        "plan_v2": LONG_REVISED_PLAN,
        "reject_title": REJECT,
        "approve_title": APPROVE,
        "step_timeout_s": STEP_TIMEOUT_S,
        "plan_open_before": plan_open_before,
    }
    result = launch_vim(tmp_path, ws, script, VIM_DIR / "driver.vim", params)
    result["_timeline"] = timeline
    result["_script"] = script
    result["_plan_open_before"] = plan_open_before
    return result


def launch_vim(
    tmp_path: Path,
    ws: Path,
    script: Path,
    driver: Path,
    params: dict[str, Any],
    coc_settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Vim in tmux on `ws` (hello.py open), coc.nvim with docs/editors.md's settings (plus
    `coc_settings`), the server on the scripted `script`; `driver` runs the session with
    `params` (+ result_path) and writes its result, returned with what the terminal showed."""
    vim, tmux_bin = coc_installed()
    server_log = tmp_path / "server.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "plan-lsp"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'exec {sys.executable} -m plan_lsp "$@" --provider scripted --script {script} '
        f"--transcript {tmp_path / 'transcript.jsonl'} --plan-shell classified "
        f"--log-file {server_log}\n"
    )
    wrapper.chmod(0o755)

    # The user's Vim: coc.nvim installed as a Vim package, a vimrc with filetype detection,
    # and coc-settings.json exactly as docs/editors.md shows it.
    home = tmp_path / "home"
    (home / ".vim" / "pack" / "coc" / "start").mkdir(parents=True)
    (home / ".vim" / "pack" / "coc" / "start" / "coc.nvim").symlink_to(COC_DIR)
    settings = readme_coc_settings()
    if coc_settings:
        settings = json.dumps({**json.loads(settings), **coc_settings}, indent=2)
    (home / ".vim" / "coc-settings.json").write_text(settings)
    vimrc = ["set nocompatible", "filetype plugin indent on", "syntax on"]
    node_path = E2E / "node-path"
    if node_path.is_file():  # install.sh found no Node >= 20.19 on the system
        vimrc.append(f"let g:coc_node_path = '{node_path.read_text().strip()}'")
    (home / ".vimrc").write_text("\n".join(vimrc) + "\n")

    result_path = tmp_path / "result.json"
    params_path = tmp_path / "params.json"
    params_path.write_text(json.dumps({**params, "result_path": str(result_path)}))
    env = {
        "HOME": str(home),
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": os.environ.get("XDG_STATE_HOME", str(home / ".local" / "state")),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "PLAN_LSP_E2E_PARAMS": str(params_path),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
    }
    exports = " ".join(f"{k}={_sh(v)}" for k, v in env.items())
    command = (
        f"cd {_sh(str(ws))} && exec env {exports} timeout -s KILL {VIM_KILL_AFTER_S} "
        f"{vim} -N -u {_sh(str(home / '.vimrc'))} -i NONE -S {_sh(str(driver))} "
        "hello.py"
    )
    tmux = [tmux_bin, "-f", "/dev/null", "-S", str(tmp_path / "tmux.sock")]
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "vim", "-x", "160", "-y", "45", command],
        check=True,
        timeout=30,
    )
    started = time.monotonic()
    try:
        with Screen(tmux) as screen:
            while time.monotonic() - started < VIM_KILL_AFTER_S + 10:
                alive = subprocess.run(
                    [*tmux, "has-session", "-t", "vim"], capture_output=True, timeout=10
                )
                if alive.returncode != 0:
                    break
                time.sleep(0.2)
        screens = screen.screens
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=10)
    elapsed = time.monotonic() - started
    log_tail = server_log.read_text()[-4000:] if server_log.exists() else "(none)"
    last_screen = screens[-1] if screens else "(none)"
    diagnostics = f"after {elapsed:.1f}s\nlast screen:\n{last_screen}\nserver log:\n{log_tail}"
    assert result_path.exists(), f"Vim wrote no result\n{diagnostics}"
    result: dict[str, Any] = json.loads(result_path.read_text(encoding="utf-8"))
    result["_diagnostics"] = diagnostics
    result["_screens"] = screens
    result["_server_log"] = server_log.read_text() if server_log.exists() else ""
    result["_transcript"] = tmp_path / "transcript.jsonl"
    return result


def _sh(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def problems_of(result: dict[str, Any]) -> list[str]:
    """Every way the session fell short, so one run reports them all."""
    out: list[str] = []

    def same(actual: Any, expected: str, what: str) -> None:
        if actual != expected:
            out.append(f"{what}:\n    expected {expected!r}\n    actual   {actual!r}")

    if result.get("ok") is not True:
        done = {k: v for k, v in result.items() if not k.startswith("_") and k != "buffer_events"}
        return [f"the session stopped early: {result.get('error')}\n{json.dumps(done)[:3000]}"]
    # Vim asked nothing: no W11/W12/W13 on any screen or in :messages, and no "Use ':wa'"
    # hint left on the screen.
    asked = [s for s in result["_screens"] if QUESTIONS.search(s)]
    if asked:
        out.append(f"Vim asked about a changed file:\n{asked[0]}")
    said = [m for m in result.get("messages", []) if QUESTIONS.search(m)]
    if said:
        out.append(f":messages: {said}")
    final_screen = "\n".join(result.get("final_screen", []))
    if "Use ':wa'" in final_screen or QUESTIONS.search(final_screen):
        out.append(f"the screen at the end:\n{final_screen}")
    # PLAN.md shown in a window, while the user stayed in hello.py.
    # coc opens PLAN.md with `tab drop` and goes back to the user's window at once (two
    # calls: a timer may see the moment between them, once); never more than that.
    if len(result.get("focus_lost", [])) > 1:
        out.append(f"the server took the focus from hello.py: {result['focus_lost'][:3]}")
    if not result.get("plan_windows"):
        out.append("PLAN.md was not shown in any window (a hidden buffer only)")
    where = "PLAN.md" if result["_plan_open_before"] else "hello.py"
    if result.get("current_after_stream") != where:
        out.append(f"after the stream the user is in {result.get('current_after_stream')!r}")
    same(result.get("plan_v1"), LONG_PLAN, "PLAN.md buffer after the first stream")
    same(result.get("plan_v2"), LONG_REVISED_PLAN, "PLAN.md buffer after the revision")
    # The code actions are in coc's default menu.
    for menu in result.get("menus", []):
        if not any(menu["title"] in line for line in menu["lines"]):
            out.append(f"coc's code-action menu lacks {menu['title']!r}: {menu['lines']}")
    approved_text = LONG_REVISED_PLAN + USER_LINE + "\n"
    same(result.get("plan_at_approval"), approved_text, "PLAN.md buffer when approving")
    state = result.get("state_after_do") or {}
    approved = state.get("approvedPlan") or {}
    same(approved.get("text"), approved_text, "approvedPlan.text")
    if approved.get("sha256") != sha(result.get("plan_at_approval") or ""):
        out.append("approvedPlan.sha256 is not the sha256 of the buffer the user approved")
    if state.get("mode") != "plan" or state.get("outcome") != "completed":
        out.append(f"state after the Do run: {state}")
    final = mirror_todos(approved_text, [(s, "completed") for s in STEPS])
    same(result.get("plan_after_do"), final, "PLAN.md buffer after the Do run")
    same(result.get("hello_buffer"), HELLO_AFTER, "hello.py buffer after the Do run")
    # hello.py is open (in a buffer) unless the user left it for PLAN.md before the prompt.
    if bool(result.get("hello_loaded")) == result["_plan_open_before"]:
        out.append(f"hello.py loaded in Vim after the Do run: {result.get('hello_loaded')}")
    # After :wa the disk holds what each buffer shows, and nothing is modified.
    same(result.get("plan_final"), final, "PLAN.md buffer at the end")
    same(result.get("plan_disk"), final, "PLAN.md on disk after :wa")
    same(result.get("hello_disk"), HELLO_AFTER, "hello.py on disk after :wa")
    same(result.get("hello_final"), HELLO_AFTER, "hello.py buffer at the end")
    # Saving the approved plan with its checklist marks leaves it approved.
    final_state = result.get("state_final") or {}
    if final_state.get("planStatus") != "approved":
        out.append(f"after :wa the plan is {final_state.get('planStatus')!r}, not approved")
    for key in ("hello_final_modified", "plan_final_modified"):
        if result.get(key) not in (0, False):
            out.append(f"{key}: {result.get(key)}")
    return out


@pytest.mark.parametrize("plan_open_before", [False, True], ids=["plan-not-open", "plan-open"])
def test_vim_coc_plan_session(tmp_path: Path, plan_open_before: bool) -> None:
    result = run_vim(tmp_path, plan_open_before)
    problems = problems_of(result)
    report = stream_report(
        [(float(t), text) for t, text in result.get("buffer_events", [])],
        result["_timeline"],
        result["_script"],
    )
    # Each plan grew in the buffer while the model streamed it, and all of it arrived.
    for plan, states in report.growing_states.items():
        if states < 5:
            problems.append(f"the plan {plan!r} showed only {states} growing states")
    for plan, missing in report.never_shown.items():
        if missing:
            problems.append(f"the plan {plan!r}: {missing} characters never shown")
    if "document model defect" in result["_server_log"]:
        defects = [ln for ln in result["_server_log"].splitlines() if "defect" in ln]
        problems.append(f"the server logged document model defects: {defects[:3]}")
    (tmp_path / "stream_report.json").write_text(
        json.dumps({**report.__dict__, "events": len(result.get("buffer_events", []))})
    )
    assert not problems, (
        "- " + "\n- ".join(problems) + f"\nsteps: {result.get('steps')}\n"
        f"longest stall {report.longest_stall_s:.2f}s\n{result['_diagnostics']}"
    )


def test_readme_shows_the_tested_coc_settings() -> None:
    settings = json.loads(readme_coc_settings())
    server = settings["languageserver"]["plan-lsp"]
    assert server["command"] == "plan-lsp" and server["args"] == ["serve"]
    assert "markdown" in server["filetypes"]
