"""Real headless Neovim (Debian's 0.7.2 and PyPI's 0.11.4) against the real server with
the scripted provider, in two scenarios per version:

- with the client-nvim plugin (tests/e2e/nvim/plan_session.lua): toggle and set the mode,
  prompt, the draft streams into PLAN.md at a model's pace (growing visibly: every buffer
  change is recorded for `model_speed.stream_report`), reject with a review note through the
  code action, the revised plan arrives the same way, a tool touches hello.py, approve
  through the code lens, the Do edit lands in hello.py's buffer and the plugin saves it, a
  build-mode shell command asks through showMessageRequest + vim.ui.select;
- with no plugin at all (tests/e2e/nvim/minimal_config.lua, client-nvim/README.md's
  configuration for 0.7 to 0.10): approval needs nothing but standard LSP;
- Neovim 0.11 only, docs/editors.md's "Neovim 0.11+ (native)" configuration as the user's
  init.lua (tests/e2e/nvim/native_session.lua), plans streamed at a model's speed: see
  `test_native_configuration_at_model_speed`.

The Lua side drives the editor and writes what it saw as JSON; this side builds the
workspace and the script and asserts on that JSON and on the server's transcript. Install
both editors with client-nvim/scripts/install-e2e.sh."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.model_speed import (
    LONG_PLAN,
    LONG_REVISED_PLAN,
    stream_report,
    write_paced_script,
)
from tests.e2e.scripts import PLAN_TEXT, plan_then_do_turns, sample_project, write_script
from tests.needs import need

REPO = Path(__file__).resolve().parents[2]
PLUGIN_DIR = REPO / "client-nvim"
LUA_DIR = Path(__file__).resolve().parent / "nvim"
# A hard ceiling: a wedged editor is killed, never waited for. The plugin's session streams
# its plan and revision at a model's pace.
NVIM_KILL_AFTER_S = 180
NVIM_ELAPSED_BOUND_S = 120

NVIM_BINARIES = {
    "0.7": os.environ.get("PLAN_LSP_NVIM_07", "/usr/bin/nvim"),
    "0.11": os.environ.get("PLAN_LSP_NVIM_011", str(PLUGIN_DIR / ".e2e" / "venv" / "bin" / "nvim")),
}

PROMPT = "Make the greeting polite"
FEEDBACK = "also mention in the plan that nothing else changes"
REVISED_PLAN = (
    "# Plan: greet politely (revised)\n\n"
    "1. Change the greeting in `hello.py` from `hi` to `hello, world`.\n"
    "2. Leave every other file as it is.\n"
)
REJECT_ACTION = "Reject with feedback from review notes (> feedback: …)"
READS_THE_DISK = "grep -q 'hello, world' hello.py && touch greeted.txt"
APPROVE_LENS = "Approve (auto-accept edits)"


def session_turns() -> list[dict[str, Any]]:
    """The shared plan → Do session with a feedback round after the first plan, both plans
    long enough to stream for seconds at a model's pace."""
    turns = plan_then_do_turns(LONG_PLAN)
    revision: list[dict[str, Any]] = [
        {
            "text": "Revising the plan.",
            "tool_calls": [{"name": "plan_write", "arguments": {"content": LONG_REVISED_PLAN}}],
        },
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    ]
    shell: list[dict[str, Any]] = [
        # Reads hello.py from disk: the marker exists only if the Do edit reached the disk.
        {
            "tool_calls": [
                {
                    "name": "bash",
                    "arguments": {
                        "command": "grep -q 'hello, world' hello.py && touch greeted.txt"
                    },
                }
            ]
        },
        {"text": "Marker created."},
    ]
    return turns[:4] + revision + turns[4:] + shell


def nvim_binary(version: str) -> str:
    binary = NVIM_BINARIES[version]
    found = shutil.which(binary)
    if found is None:
        reason = f"Neovim {version} not found at {binary}; run client-nvim/scripts/install-e2e.sh"
        need(False, reason)
    return found


@dataclass
class NvimRun:
    result: dict[str, Any]
    elapsed: float
    ws: Path
    transcript: Path
    script: Path
    timeline: Path | None


def run_nvim(
    version: str,
    lua_script: Path,
    turns: list[dict[str, Any]],
    tmp_path: Path,
    plans_dir: str | None = None,
    paced: bool = False,
    plans: tuple[str, str] = (PLAN_TEXT, REVISED_PLAN),
    hello: tuple[str, str] = ("print('hi')\n", "print('hello, world')\n"),
    server_args: tuple[str, ...] = (),
    files: dict[str, str] | None = None,
) -> NvimRun:
    """One headless Neovim running `lua_script` against a fresh workspace and server (started
    with `server_args` added); with `paced`, the model streams at `MODEL_PACE` and says when
    in a timeline. `files`: more files of the workspace (relative path: text)."""
    nvim = nvim_binary(version)
    reported = subprocess.run(
        [nvim, "--version"], capture_output=True, text=True, timeout=30, check=True
    ).stdout.splitlines()[0]
    assert reported.startswith(f"NVIM v{version}."), f"{nvim} is {reported}, not {version}"

    ws = sample_project(tmp_path / "ws")
    (ws / "hello.py").write_text(hello[0])
    for name, text in (files or {}).items():
        (ws / name).write_text(text)
    plan_path = ws / (plans_dir or ".plan-lsp/plans") / "PLAN.md"
    plan_path.parent.mkdir(parents=True)
    plan_path.write_text("")
    timeline = tmp_path / "timeline.jsonl" if paced else None
    if timeline is not None:
        script = write_paced_script(tmp_path / "script.json", turns, timeline)
    else:
        script = write_script(tmp_path / "script.json", turns)
    transcript = tmp_path / "transcript.jsonl"
    result_path = tmp_path / "result.json"
    server_log = tmp_path / "server.log"
    params = {
        "plugin_dir": str(PLUGIN_DIR),
        "workspace": str(ws),
        "plan_path": str(plan_path),
        "plans_dir": plans_dir,
        "server_cmd": [
            sys.executable,
            "-m",
            "plan_lsp",
            "serve",
            "--provider",
            "scripted",
            "--script",
            str(script),
            "--transcript",
            str(transcript),
            "--plan-shell",
            "classified",
            "--log-file",
            str(server_log),
            *server_args,
        ],
        "result_path": str(result_path),
        "prompt": PROMPT,
        "shell_prompt": "Leave a marker file",
        "feedback": FEEDBACK,
        "plan_v1": plans[0],
        "plan_v2": plans[1],
        "reject_action": REJECT_ACTION,
        "approve_lens": APPROVE_LENS,
        "hello_after": hello[1],
    }
    params_path = tmp_path / "params.json"
    params_path.write_text(json.dumps(params))
    env = {
        **os.environ,
        "PLAN_LSP_E2E_PARAMS": str(params_path),
        # Neovim's own LSP log and state stay inside the test's folder.
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
    }
    started = time.monotonic()
    proc = subprocess.run(
        [
            "timeout",
            "-s",
            "KILL",
            str(NVIM_KILL_AFTER_S),
            nvim,
            "--headless",
            "--clean",
            "-n",
            "-u",
            "NONE",
            "-c",
            f"luafile {lua_script}",
        ],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=NVIM_KILL_AFTER_S + 30,
    )
    elapsed = time.monotonic() - started
    diagnostics = (
        f"exit {proc.returncode} after {elapsed:.1f}s\nstderr:\n{proc.stderr[-3000:]}\n"
        f"server log:\n{server_log.read_text()[-3000:] if server_log.exists() else '(none)'}"
    )
    assert result_path.exists(), f"no result written\n{diagnostics}"
    result = json.loads(result_path.read_text())
    assert result["ok"], f"{result.get('error')}\nsteps: {result['steps']}\n{diagnostics}"
    assert proc.returncode == 0, diagnostics
    assert result["nvim"].startswith(version + ".")
    assert elapsed < NVIM_ELAPSED_BOUND_S, f"the Neovim run took {elapsed:.1f}s"
    return NvimRun(result, elapsed, ws, transcript, script, timeline)


def assert_same_text(actual: str, expected: str, what: str) -> None:
    """Byte-for-byte equality, with a message that shows how the texts differ."""
    if actual == expected:
        return
    doubled = actual == expected * 2 or actual.count(expected.splitlines()[0]) > 1
    raise AssertionError(
        f"{what} differs from the plan{' (the plan appears twice)' if doubled else ''}:\n"
        f"expected {len(expected)} chars: {expected!r}\nactual {len(actual)} chars: {actual!r}"
    )


VERSIONS = pytest.mark.parametrize("version", sorted(NVIM_BINARIES), ids=lambda v: f"nvim-{v}")


@pytest.mark.parametrize("plans_dir", [None, ".plan-lsp/drafts"], ids=["default-plans", "drafts"])
@VERSIONS
def test_plan_session_with_the_plugin(version: str, plans_dir: str | None, tmp_path: Path) -> None:
    """The plugin renders the state the server pushes (mode, running, the plan's uri, the
    shell protection) and follows a configured plans folder."""
    run = run_nvim(
        version,
        LUA_DIR / "plan_session.lua",
        session_turns(),
        tmp_path,
        plans_dir,
        paced=True,
        plans=(LONG_PLAN, LONG_REVISED_PLAN),
        # no final line break: Neovim reads it 'noeol', and the plugin's save of the Do
        # edit must not add one (its 'fixendofline' would)
        hello=("print('hi')", "print('hello, world')"),
    )
    result, transcript = run.result, run.transcript
    # (actual, plan, what): compared last, so one run checks everything else too
    texts: list[tuple[str, str, str]] = []

    # toggling through :PlanToggle changed the server's state, and the statusline followed
    assert result["initial_mode"] == "plan"
    assert result["toggled_modes"] == ["build", "plan"]
    assert result["set_modes"] == ["build", "plan"]
    assert [s.split(" ")[0] for s in result["statusline"][:3]] == ["[Plan]", "[Build]", "[Plan]"]
    assert all("· shell classified" in s for s in result["statusline"]), result["statusline"]

    # the prompt's run drafted the plan into the PLAN.md buffer through applyEdit
    assert result["prompt_run"]["stopReason"] == "plan_submitted"
    texts.append((result["plan_buffer_v1"], LONG_PLAN, "PLAN.md buffer after the first stream"))
    assert result["apply_edits"].get("PLAN.md", 0) >= 1
    assert result["state_after_prompt"]["planStatus"] == "submitted"
    assert result["state_after_prompt"]["mode"] == "plan"
    blocked = "\n".join(result["log_blocked"])
    assert "BLOCKED write_file" in blocked and "BLOCKED bash" in blocked

    # the code action rejected with the buffer's review note and a new planning run
    # wrote the revised plan into the buffer
    assert REJECT_ACTION in result["code_action_titles"]
    assert result["feedback_run"]["runId"] != result["prompt_run"]["runId"]
    assert result["feedback_run"]["stopReason"] == "plan_submitted"
    assert result["feedback_run_drafted"] is True
    writes = {w["runId"]: w for w in result["plan_writes"]}
    for name in ("prompt_run", "feedback_run"):
        write = writes[result[name]["runId"]]
        assert write["isError"] is False, f"plan_write in the {name}: {write['content']}"
    texts.append((result["plan_buffer_v2"], LONG_REVISED_PLAN, "PLAN.md buffer after the revision"))
    # both plans grew visibly in the buffer while the model streamed them
    assert run.timeline is not None
    events = [(float(t), str(text)) for t, text in result["buffer_events"]]
    report = stream_report(events, run.timeline, run.script)
    print(f"stream report: {report}")
    for plan in (LONG_PLAN, LONG_REVISED_PLAN):
        assert report.never_shown[plan[:40]] == 0, report
        assert report.growing_states[plan[:40]] >= 5, report
    assert result["state_after_reject"]["planStatus"] == "submitted"
    assert result["state_after_reject"]["mode"] == "plan"

    # the approve lens ran through vim.lsp.codelens.run(); build mode; the Do edit landed
    assert APPROVE_LENS in result["code_lens_titles"]
    assert "Compare with previous revision" in result["lens_titles_before"]
    assert result["statusline"][3].startswith("[Build] auto_edit")
    assert result["do_run"]["stopReason"] == "end_turn"
    assert result["hello_buffer"] == "print('hello, world')"
    assert result["apply_edits"].get("hello.py", 0) >= 1
    # the plugin saved the buffer the server changed: the disk agrees, nothing is unsaved
    assert result["hello_disk"] == "print('hello, world')"
    assert result["hello_modified"] is False
    after = result["state_after_do"]
    assert after["mode"] == "plan" and after["planStatus"] == "approved"
    assert after["permissionMode"] == "ask" and after.get("nextRequest") is None
    texts.append((after["approvedPlan"]["text"], LONG_REVISED_PLAN, "approved text"))
    texts.append(
        (result["plan_buffer_after_do"], LONG_REVISED_PLAN, "PLAN.md buffer after the Do run")
    )
    assert after["outcome"] == "completed"
    assert any("approved" in t for t in result["lens_titles_after"])
    assert not result["unexpected_prompts"]

    # a shell command in build mode asked through showMessageRequest; "Allow once" ran it
    assert result["permission_titles"] == ["Allow once", "Allow always", "Deny"]
    # the prompt, then its answer (the history keeps both)
    assert [(u["tool"], u.get("decision")) for u in result["permission_updates"]] == [
        ("bash", None),
        ("bash", "allow_once"),
    ]
    assert result["shell_run"]["stopReason"] == "end_turn"
    assert (run.ws / "greeted.txt").exists()

    # the plan-lsp://log buffer (opened with :PlanLog) told the story
    assert result["log_window_shows"] == "plan-lsp://log"
    log = result["log_lines"]
    prompt_tag = f"[{result['prompt_run']['runId'][:6]}]"
    do_tag = f"[{result['do_run']['runId'][:6]}]"
    assert f"{prompt_tag} Reading first." in log
    assert any(line.startswith(f"{prompt_tag} BLOCKED write_file: ") for line in log)
    assert any(line.startswith(f'{do_tag} call edit_file {{"path": "hello.py"') for line in log)
    assert f"{prompt_tag} done: plan_submitted" in log
    assert f"{do_tag} done: end_turn" in log
    assert "stopped" in result["steps"]

    # what reached the model: the feedback run carried the review note, the Do run the
    # revised plan
    requests = [json.loads(line) for line in transcript.read_text().splitlines()]
    by_run: dict[str, list[dict[str, Any]]] = {}
    for r in requests:
        by_run.setdefault(r["runId"], []).append(r)
    feedback_requests = by_run[result["feedback_run"]["runId"]]
    assert all(r["mode"] == "plan" for r in feedback_requests)
    assert any(FEEDBACK in json.dumps(r["messages"]) for r in feedback_requests)
    do_requests = by_run[result["do_run"]["runId"]]
    assert do_requests and all(r["mode"] == "build" for r in do_requests)
    assert LONG_REVISED_PLAN in "\n".join(m["content"] for m in do_requests[0]["messages"])

    # the buffer is the truth: PLAN.md held exactly each plan, and the approved text is it
    for actual, expected, what in texts:
        assert_same_text(actual, expected, what)


@VERSIONS
def test_approval_needs_only_standard_lsp(version: str, tmp_path: Path) -> None:
    """client-nvim/README.md's no-plugin configuration: plain client, code lens approval."""
    run = run_nvim(version, LUA_DIR / "minimal_config.lua", plan_then_do_turns(), tmp_path)
    result = run.result
    assert result["prompt_result"]["stopReason"] == "plan_submitted"
    assert_same_text(result["plan_buffer"], PLAN_TEXT, "PLAN.md buffer at the end of the stream")
    assert APPROVE_LENS in result["code_lens_titles"]
    assert result["hello_buffer"] == "print('hello, world')\n"
    state = result["state"]
    assert state["mode"] == "plan" and state["planStatus"] == "approved"
    assert state["running"] is False and state["outcome"] == "completed"
    assert_same_text(state["approvedPlan"]["text"], PLAN_TEXT, "approved text")
    assert_same_text(result["plan_buffer_after_do"], PLAN_TEXT, "PLAN.md buffer after the Do run")


# -- token usage and compaction with the plugin ----------------------------------------------

# The server's context window for the usage session (`--context-window`). The first run reads
# four modules: together more than the share of the window a compaction keeps verbatim (so
# there is something to compact), while every request stays below the share past which the
# server prunes by itself (so nothing compacts before the user asks).
USAGE_CONTEXT_WINDOW = 40_000
MODULES = {
    f"module_{n}.py": f"def function_{n}(value):  # module {n}, a line of ordinary code\n" * 120
    for n in range(4)
}


def usage_turns() -> list[dict[str, Any]]:
    """A build-mode run that reads the modules and waits on a permission prompt (denied), then
    a planning run."""
    reads = [{"name": "read_file", "arguments": {"path": name}} for name in MODULES]
    return [
        {"tool_calls": reads},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch marker.txt"}}]},
        {"text": "Not done: the command was denied."},
        {
            "text": "Reading first.",
            "tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}],
        },
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": PLAN_TEXT}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    ]


def format_tokens(n: int) -> str:
    """What the plugin shows of a token count (client-nvim's `format_tokens`)."""
    if n < 1000:
        return str(max(n, 0))
    size, suffix = (1_000_000, "M") if n >= 999_950 else (1000, "k")
    scaled = n / size
    text = f"{scaled:.1f}" if scaled < 100 else f"{scaled:.0f}"
    return text.removesuffix(".0") + suffix


def test_usage_and_compaction_with_the_plugin(tmp_path: Path) -> None:
    """Neovim 0.11 with the plugin on default settings: the statusline shows the context fill
    once a run has used some (nothing before); a compaction asked for before there is anything
    to compact changes nothing and claims nothing; :PlanCompact while a run waits on a permission
    prompt is refused with the server's reason in a notification; after the run,
    :PlanCompact compacts (planLsp/state counts it) and the log buffer shows the compaction:
    trigger, pruned tool outputs, tokens before → after, and the summary."""
    run = run_nvim(
        "0.11",
        LUA_DIR / "usage_session.lua",
        usage_turns(),
        tmp_path,
        server_args=("--context-window", str(USAGE_CONTEXT_WINDOW)),
        files=MODULES,
    )
    result = run.result

    # before any request: usage known to be empty, nothing about it in the statusline
    assert result["usage_before"]["contextTokens"] == 0
    assert result["usage_before"]["compactions"] == 0
    assert result["statusline_before"].startswith("[Plan] ask")
    assert "ctx" not in result["statusline_before"], result["statusline_before"]

    # a compaction asked for too early: nothing compacted, and the plugin does not say it was
    assert result["early_compact"] == {"compactions": 0}, result["early_compact"]
    assert "Nothing to compact" in result["early_messages"], result["early_messages"]
    early = [n["message"] for n in result["early_notifications"]]
    assert not any("compacted" in m for m in early), early

    # the refusal while a run waited for the user
    assert result["running_during_prompt"] is True
    assert "Deny" in result["permission_titles"]
    refusal = result["refusal"]
    assert refusal["level"] == 4, refusal  # vim.log.levels.ERROR
    prefix = "plan-lsp: could not compact the conversation: "
    assert refusal["message"].startswith(prefix) and len(refusal["message"]) > len(prefix), refusal
    assert result["compactions_after_refusal"] == 0
    assert result["refused_run"]["stopReason"] == "end_turn"
    assert not (run.ws / "marker.txt").exists()

    # after the planning run: the context fill in the statusline is the server's usage
    assert result["plan_run"]["stopReason"] == "plan_submitted"
    usage = result["usage_after_run"]
    assert usage["contextWindow"] == USAGE_CONTEXT_WINDOW
    assert usage["contextTokens"] > 0 and usage["inputTokens"] > 0 and usage["outputTokens"] > 0
    fill = round(100 * usage["contextTokens"] / usage["contextWindow"])
    assert 0 < fill < 100, usage
    assert result["statusline_after_run"] == f"[Plan] ask · shell classified · ctx {fill}%"

    # :PlanCompact: counted by the server, shown in the statusline and the log
    assert result["usage_after_compact"]["compactions"] == 1
    assert "ctx" in result["statusline_after_compact"]
    compaction = result["compaction"]
    assert compaction["trigger"] == "manual"
    assert compaction["summary"].strip(), compaction
    notice = result["notification_after_compact"]["message"]
    assert notice.startswith("plan-lsp: conversation compacted: context "), notice
    assert notice.endswith(" · 1 compaction"), notice
    assert result["log_window_shows"] == "plan-lsp://log"
    pruned = compaction["prunedOutputs"]
    headline = (
        f"COMPACTED (manual): {pruned} tool output{'' if pruned == 1 else 's'} pruned, "
        f"{format_tokens(compaction['tokensBefore'])} → {format_tokens(compaction['tokensAfter'])}"
        " tokens"
    )
    log = result["log_lines"]
    at = next((i for i, line in enumerate(log) if line.endswith(headline)), None)
    assert at is not None, f"no {headline!r} in the log:\n" + "\n".join(log)
    summary = compaction["summary"].split("\n")
    assert log[at + 1] == "    summary:"
    assert log[at + 2 : at + 2 + len(summary)] == ["      " + line for line in summary]
    assert not result["unexpected_prompts"]


# -- Neovim 0.11+ with docs/editors.md's native configuration ---------------------------------

EDITORS_DOC = REPO / "docs" / "editors.md"
NATIVE_MARKER = "-- plan-lsp with Neovim 0.11's own LSP client"
# A model-speed session takes a while: two ~2 KB plans at ~1 KB/s with pauses, and a Do run.
NATIVE_KILL_AFTER_S = 240
NATIVE_ELAPSED_BOUND_S = 180
COMPARE_LENS = "Compare with previous revision"
# After the Do run: the plan approved and carried out.
APPROVED_LENS = "Plan approved ✓ — done"
USER_LINE = "Added by the user: keep the file's trailing newline ✍."
# The Do run's todos: the revised plan's five steps, as the model words them.
PLAN_STEPS = [
    m.group(1) for m in re.finditer(r"^\d+\. (.+)$", LONG_REVISED_PLAN, flags=re.MULTILINE)
]


def readme_native_config() -> str:
    """The Lua block of docs/editors.md's "Neovim 0.11+ (native)" section, exactly as written."""
    readme = EDITORS_DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```lua\n(.*?)```", readme, flags=re.DOTALL)
    found = [b for b in blocks if b.startswith(NATIVE_MARKER)]
    assert len(found) == 1, (
        f"docs/editors.md has {len(found)} Lua blocks starting {NATIVE_MARKER!r}"
    )
    return found[0]


def native_turns() -> list[dict[str, Any]]:
    """Plan, revision after the review note, then a Do run that ticks the plan's steps."""

    def todos(done: int) -> dict[str, Any]:
        """The first `done` steps completed, the next in progress, the rest pending."""

        def status(n: int) -> str:
            return "completed" if n < done else "in_progress" if n == done else "pending"

        items = [{"content": step, "status": status(n)} for n, step in enumerate(PLAN_STEPS)]
        return {"name": "todo_write", "arguments": {"todos": items}}

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
            "new_text": "print('hello, world')",
        },
    }
    do = [
        {"tool_calls": [todos(0)]},
        {"tool_calls": [edit]},
        {"tool_calls": [todos(2)]},
        {"tool_calls": [todos(len(PLAN_STEPS))]},
        {"text": "Done: the greeting is polite."},
    ]
    return plan(LONG_PLAN) + plan(LONG_REVISED_PLAN) + do


def checked(plan: str) -> str:
    """`plan` with every numbered step ticked, as the Do run leaves it."""
    return re.sub(r"^(\d+)\. ", r"\1. [x] ", plan, flags=re.MULTILINE)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("plan_open_before", [False, True], ids=["plan-not-open", "plan-open"])
def test_native_configuration_at_model_speed(plan_open_before: bool, tmp_path: Path) -> None:
    """docs/editors.md's "Neovim 0.11+ (native)" block is the user's init.lua (vim.lsp.config +
    vim.lsp.enable, no plugin, every other setting Neovim's default) and `plan-lsp` is on PATH.
    The user opens hello.py (and, in one variant, the empty PLAN.md) and runs :PlanPrompt.
    The plan and its revision stream at a model's pace into PLAN.md (which the server opens
    when it is not open), growing visibly; the Approve lens shows
    by itself once each is submitted (the driver never calls vim.lsp.codelens.refresh()); a
    review note and the code action start the revision; the user types a line into the plan
    and approves with the lens. At the end the approved text is what the buffer held, the
    Do edit is in hello.py's buffer and file, the plan's checklist is fully ticked in buffer
    and file, no buffer the agent touched is left modified, no file changed behind a buffer
    (Neovim's :checktime finds nothing after each plan and at the end) and nothing asked the
    user anything."""
    nvim = nvim_binary("0.11")
    ws = sample_project(tmp_path / "ws")
    # hello.py without a final line break: Neovim reads it 'noeol', and saving the agent's
    # edit must not add one (its 'fixendofline' would)
    (ws / "hello.py").write_text("print('hi')")
    subprocess.run(["git", "init", "-q", str(ws)], check=True, timeout=30)
    plan_path = ws / ".plan-lsp" / "plans" / "PLAN.md"
    if plan_open_before:
        plan_path.parent.mkdir(parents=True)
        plan_path.write_text("")
    timeline = tmp_path / "timeline.jsonl"
    script = write_paced_script(tmp_path / "script.json", native_turns(), timeline)
    transcript = tmp_path / "transcript.jsonl"
    server_log = tmp_path / "server.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "plan-lsp"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'exec {sys.executable} -m plan_lsp "$@" --provider scripted --script {script} '
        f"--transcript {transcript} --plan-shell classified --log-file {server_log}\n"
    )
    wrapper.chmod(0o755)
    config_home = tmp_path / "xdg-config"
    (config_home / "nvim").mkdir(parents=True)
    (config_home / "nvim" / "init.lua").write_text(readme_native_config(), encoding="utf-8")
    result_path = tmp_path / "result.json"
    hello_after = "print('hello, world')"
    params = {
        "workspace": str(ws),
        "plan_path": str(plan_path),
        "plan_open_before": plan_open_before,
        "result_path": str(result_path),
        "prompt": PROMPT,
        "feedback": FEEDBACK,
        "reject_action": REJECT_ACTION,
        "approve_lens": APPROVE_LENS,
        "compare_lens": COMPARE_LENS,
        "approved_lens": APPROVED_LENS,
        "user_line": USER_LINE,
        "hello_after": hello_after,
    }
    params_path = tmp_path / "params.json"
    params_path.write_text(json.dumps(params))
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        "PLAN_LSP_E2E_PARAMS": str(params_path),
        "XDG_CONFIG_HOME": str(config_home),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
    }
    started = time.monotonic()
    proc = subprocess.run(
        [
            "timeout",
            "-s",
            "KILL",
            str(NATIVE_KILL_AFTER_S),
            nvim,
            "--headless",
            "-c",
            f"luafile {LUA_DIR / 'native_session.lua'}",
        ],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=NATIVE_KILL_AFTER_S + 30,
    )
    elapsed = time.monotonic() - started
    diagnostics = (
        f"exit {proc.returncode} after {elapsed:.1f}s\nstderr:\n{proc.stderr[-3000:]}\n"
        f"server log:\n{server_log.read_text()[-3000:] if server_log.exists() else '(none)'}"
    )
    assert result_path.exists(), f"no result written\n{diagnostics}"
    result = json.loads(result_path.read_text())
    assert result["ok"], f"{result.get('error')}\nsteps: {result['steps']}\n{diagnostics}"
    assert proc.returncode == 0, diagnostics
    assert result["nvim"].startswith("0.11.")
    assert elapsed < NATIVE_ELAPSED_BOUND_S, f"the Neovim run took {elapsed:.1f}s"
    assert Path(result["root_dir"]).resolve() == ws.resolve()

    # the plan streamed into the buffer the server opened, growing while the model wrote it
    assert result["plan_shown_in_window"] is True
    assert_same_text(result["plan_buffer_v1"], LONG_PLAN, "PLAN.md buffer after the stream")
    assert_same_text(result["plan_buffer_v2"], LONG_REVISED_PLAN, "PLAN.md after the revision")
    events = [(float(t), str(text)) for t, text in result["buffer_events"]]
    report = stream_report(events, timeline, script)
    print(f"stream report: {report}")
    for plan in (LONG_PLAN, LONG_REVISED_PLAN):
        assert report.never_shown[plan[:40]] == 0, report
        assert report.growing_states[plan[:40]] >= 5, report

    # the lenses came by themselves: Approve after each submission, Compare after the revision
    assert APPROVE_LENS in result["lens_titles_v1"]
    assert APPROVE_LENS in result["lens_text_v1"], result["lens_text_v1"]
    assert COMPARE_LENS in result["lens_titles_v2"]
    assert REJECT_ACTION in result["code_action_titles"]
    assert APPROVE_LENS in result["code_lens_titles"]
    # each finished draft was saved by Neovim: the buffer is not left modified
    assert result["plan_modified_v1"] is False
    assert result["plan_modified_v2"] is False

    # what the user approved is what the buffer held, the line typed at the end included
    approved_text = LONG_REVISED_PLAN + USER_LINE + "\n"
    assert_same_text(result["plan_buffer_approved"], approved_text, "PLAN.md when approved")
    state = result["state"]
    assert state["mode"] == "plan" and state["planStatus"] == "approved", state
    assert state["running"] is False and state["outcome"] == "completed", state
    assert state["approvedPlan"]["sha256"] == sha(approved_text)
    assert_same_text(state["approvedPlan"]["text"], approved_text, "approved text")

    # the Do run: its edit in the buffer and on disk, every step ticked in buffer and file
    assert result["hello_buffer"] == hello_after
    assert (ws / "hello.py").read_text() == hello_after
    final_plan = checked(approved_text)
    assert_same_text(result["plan_buffer_after_do"], final_plan, "PLAN.md buffer after the Do")
    assert sha(result["plan_buffer_after_do"]) == sha(plan_path.read_text(encoding="utf-8"))
    assert APPROVED_LENS in result["lens_titles_after"], result["lens_titles_after"]

    # nothing left behind: no buffer modified, no file changed behind a buffer, no question
    assert result["hello_modified"] is False
    assert result["plan_modified"] is False
    assert result["file_changed"] == []
    # Neovim prints the label of every workspace/applyEdit: the server sends it none
    assert "Workspace edit" not in result["messages"], result["messages"]
    assert "WARNING" not in result["messages"] and "W1" not in result["messages"], result[
        "messages"
    ]
    assert not result["unexpected_prompts"]
