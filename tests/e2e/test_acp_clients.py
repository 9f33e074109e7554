"""`plan-lsp acp` through ACP clients nobody here wrote, read from what they show the user.

acpx (npm `acpx`, a headless command-line ACP client; `scripts/test-tools.sh` installs it
into the test cache) runs plan-lsp with the scripted provider at a model's speed in a
terminal of its own (a pty: acpx asks its permission questions only on a terminal). Its
screen must show the whole plan before it asks to approve it; the answers are typed.
Then: the Do run's edit asked with the client's own prompt, the file changed, and the write
refused in plan mode shown with its reason in words. And an MCP server acpx passes
(`--mcp-config`) gated as configured ones are, and a slash command.
CodeCompanion.nvim: tests/e2e/test_acp_codecompanion.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.model_speed import LONG_PLAN, write_paced_script
from tests.e2e.scripts import plan_then_do_turns, sample_project, write_script
from tests.mcp_servers import fake_command, tool
from tests.needs import need, need_program
from tests.turns import PLAN_TEXT, call, calls

ACPX_VERSION = "0.19.1"
ACPX = (
    Path(os.environ.get("PLAN_LSP_TEST_CACHE", Path.home() / ".cache/plan-lsp-tests"))
    / "acpx/node_modules/.bin/acpx"
)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# How long acpx may take to show what is awaited (a model-speed plan streams for seconds).
WAIT_S = 120.0


class Screen:
    """A program on a terminal of its own: what it has shown so far, and typing."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave, close_fds=True
        )
        os.close(slave)
        self.raw = b""

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw.decode("utf-8", "replace")).replace("\r\n", "\n")

    def wait_for(self, pattern: str, after: int = 0) -> int:
        """The position of `pattern` in what was shown (from `after` on), read as it comes."""
        deadline = time.monotonic() + WAIT_S
        while (found := self.text.find(pattern, after)) < 0:
            left = deadline - time.monotonic()
            if left <= 0 or (self.process.poll() is not None and not self._read(0.5)):
                raise AssertionError(f"acpx never showed {pattern!r}; it showed:\n{self.text}")
            self._read(min(left, 1.0))
        return found

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # the program ended and its terminal closed
            return False
        self.raw += chunk
        return bool(chunk)

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\r")

    def close(self, wait: float = WAIT_S) -> int | None:
        """The program's exit status once it ends by itself within `wait` seconds (None:
        it did not, and was killed)."""
        try:
            return self.process.wait(wait)
        except subprocess.TimeoutExpired:
            return None
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            os.close(self.master)


def _pids_with(argument: str) -> list[int]:
    """The processes of this machine with `argument` on their command line."""
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if proc.name.isdigit() and argument.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
    return found


def _acpx() -> str:
    need_program("node", "acpx runs on Node.js")
    need(ACPX.exists(), f"acpx {ACPX_VERSION} is not installed at {ACPX}")
    return str(ACPX)


def test_acpx_shows_the_plan_before_asking_then_the_edit_and_a_refusal(tmp_path: Path) -> None:
    acpx = _acpx()
    ws = sample_project(tmp_path / "ws")
    script = write_paced_script(
        tmp_path / "script.json", plan_then_do_turns(LONG_PLAN), tmp_path / "timeline.jsonl"
    )
    agent = [sys.executable, "-m", "plan_lsp", "acp", "--provider", "scripted"]
    agent += ["--script", str(script), "--plan-shell", "classified"]
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1", "TERM": "dumb"}
    argv = [acpx, "--cwd", str(ws), "--agent", " ".join(agent), "exec"]
    screen = Screen([*argv, "Make the greeting polite"], ws, env)
    finished = False
    try:
        # The write the model tried in plan mode: refused, its reason in words.
        refused = screen.wait_for("Refused: write_file: plan mode only allows read-only tools")
        # The whole plan is on the screen before the question to approve it.
        asked = screen.wait_for("[permission] Allow Build from this plan")
        shown = screen.text[:asked]
        assert LONG_PLAN in shown, shown[-3000:]
        assert shown.index("The plan for your approval") > refused
        screen.type("y")
        # Approved with "ask before edits": the edit is asked with the client's own prompt.
        edit = screen.wait_for("[permission] Allow Edit hello.py [edit]? (y/N)", asked)
        screen.type("y")
        screen.wait_for("[done] end_turn", edit)
        finished = True
    finally:
        status = screen.close(WAIT_S if finished else 0)  # a failed test stops it at once
    assert status == 0, screen.text[-3000:]
    text = screen.text
    assert (ws / "hello.py").read_text() == "print('hello, world')\n"
    assert '{"error"' not in text and "tool_not_allowed" not in text
    assert "Done: the greeting is updated." in text[edit:]


def test_acpx_passes_an_mcp_server_whose_read_tool_runs_in_plan_mode_and_a_command(
    tmp_path: Path,
) -> None:
    """acpx's `--mcp-config` server: its read tool (listed read-only in the user config) runs
    in plan mode, its write tool is refused with the reason; then `/usage`, a slash command
    the core answers, not the model."""
    acpx = _acpx()
    ws = sample_project(tmp_path / "ws")
    spec = {"tools": [tool("read_note", "echo"), tool("write_note", "write")]}
    servers = [{"name": "notes", "command": sys.executable, "args": fake_command(spec)[1:]}]
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    config = tmp_path / "config.toml"
    config.write_text('[mcp.client_read_only_tools]\nnotes = ["read_note"]\n')
    reads = [call("mcp__notes__read_note", topic="cache"), call("mcp__notes__write_note", path="n")]
    script = write_script(tmp_path / "script.json", [calls(*reads), {"text": "Read the note."}])
    agent = f"{sys.executable} -m plan_lsp acp --provider scripted --script {script}"
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1", "PLAN_LSP_CONFIG": str(config)}
    argv = [acpx, "--cwd", str(ws), "--mcp-config", str(tmp_path / "mcp.json"), "--agent", agent]

    def run(prompt: str) -> str:
        done = subprocess.run([*argv, "exec", prompt], cwd=ws, env=env, capture_output=True,
                              text=True, timeout=WAIT_S)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return ANSI.sub("", done.stdout)

    shown = run("Look at the notes")
    assert "notes: read_note (completed)" in shown and '{"topic": "cache"}' in shown, shown
    assert "notes: write_note n (failed)" in shown
    assert "Refused: mcp__notes__write_note: plan mode only allows read-only tools" in shown
    assert not (ws / "n").exists()
    assert "Context: " in run("/usage")


def test_acpx_named_sessions_on_one_folder_keep_their_own_conversations_across_processes(
    tmp_path: Path,
) -> None:
    """Two named acpx sessions on one folder (`sessions new --name`); each `prompt -s` starts
    plan-lsp again and resumes its session (`session/resume`): the model is given that
    session's conversation only, never the other's."""
    acpx = _acpx()
    ws = sample_project(tmp_path / "ws")
    turns = [{"text": "Noted."}]
    script = write_script(tmp_path / "script.json", turns)
    transcript = tmp_path / "t.jsonl"
    agent = f"{sys.executable} -m plan_lsp acp --provider scripted --script {script}"
    agent += f" --transcript {transcript} --plan-shell classified"
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1", "TERM": "dumb"}
    argv = [acpx, "--cwd", str(ws), "--agent", agent, "--ttl", "1"]

    def run(*args: str) -> str:
        done = subprocess.run([*argv, *args], cwd=ws, env=env, capture_output=True,
                              text=True, timeout=WAIT_S)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        # acpx keeps the agent for `--ttl` seconds after a command; the next command is to
        # start plan-lsp anew (and acpx refuses a command while that owner shuts down).
        deadline = time.monotonic() + WAIT_S
        while _pids_with(str(script)):
            assert time.monotonic() < deadline, "plan-lsp outlived acpx's --ttl"
            time.sleep(0.1)
        return ANSI.sub("", done.stdout + done.stderr)

    made = [run("sessions", "new", "--name", name) for name in ("one", "two")]
    ids = [re.findall(r"created session \w+ \((conv-[0-9a-f]+)\)", m) for m in made]
    assert ids[0] and ids[1] and ids[0] != ids[1], made
    for session, prompt in (("one", "Remember apples"), ("two", "Hello two"),
                            ("one", "What did I say")):  # fmt: skip
        shown = run("prompt", "-s", session, prompt)
        assert "session/resume" in shown and "Noted." in shown, shown
    requests = [json.loads(line) for line in transcript.read_text().splitlines()]
    said = [
        [m["content"] for m in r["messages"] if m["role"] in ("user", "assistant")
         and "plan-mode-reminder" not in str(m["content"])]
        for r in requests
    ]  # fmt: skip
    assert said == [
        ["Remember apples"],
        ["Hello two"],
        ["Remember apples", "Noted.", "What did I say"],
    ]
    # The mode switched from the client holds in the next process; /compact is the core's.
    assert "mode set: build" in run("set-mode", "-s", "one", "build")
    assert "Compacted the conversation." in run("prompt", "-s", "one", "/compact")
    run("prompt", "-s", "one", "Build now")
    last = json.loads(transcript.read_text().splitlines()[-1])
    assert "Build now" in json.dumps(last)
    assert "plan-mode-reminder" not in json.dumps(last), "session one is still in plan mode"


def test_acpx_approve_command_approves_the_plan_shown_and_runs_it(tmp_path: Path) -> None:
    """The approval question answered "no" (acpx without a terminal denies), the plan stays
    unapproved; `/approve` in the same session shows the plan in the conversation and then
    approves that text and runs it (acpx keeps the agent between commands: `--ttl`)."""
    acpx = _acpx()
    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "script.json", plan_then_do_turns(PLAN_TEXT))
    agent = f"{sys.executable} -m plan_lsp acp --provider scripted --script {script}"
    agent += " --plan-shell classified"
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1", "TERM": "dumb"}
    argv = [acpx, "--cwd", str(ws), "--agent", agent, "--ttl", "120"]

    def run(*args: str, status: int = 0) -> str:
        done = subprocess.run([*argv, *args], cwd=ws, env=env, capture_output=True,
                              text=True, timeout=WAIT_S)  # fmt: skip
        assert done.returncode == status, done.stdout + done.stderr
        return ANSI.sub("", done.stdout + done.stderr)

    try:
        run("sessions", "new", "--name", "p")
        # acpx's status 5: a permission was denied
        asked = run("--non-interactive-permissions", "deny", "prompt", "-s", "p", "Plan it",
                    status=5)  # fmt: skip
        assert "The plan stays unapproved" in asked, asked
        assert (ws / "hello.py").read_text() == "print('hi')\n"
        approved = run("--approve-all", "prompt", "-s", "p", "/approve")
        shown = approved.index("The plan for your approval")
        assert PLAN_TEXT.strip() in approved[shown:], approved
        assert approved.index("Edit hello.py") > shown
        assert (ws / "hello.py").read_text() == "print('hello, world')\n"
    finally:
        for pid in _pids_with(str(script)):  # acpx's agent would wait out its --ttl
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
