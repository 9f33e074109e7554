"""What the environment can make the sandbox hide: only regular files and directories that
can be hidden without breaking the sandbox. Users point credential variables at /dev/null to
switch a tool's configuration off (`KUBECONFIG=/dev/null`); such a value, or a device, a
/proc or /sys entry, a FIFO, `/` or a system directory, must neither break the sandbox (and
make the server fall back to a weaker mechanism) nor be bound over."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from plan_lsp.policy.sandbox import BUBBLEWRAP, LANDLOCK, Mechanism, probe_sandbox
from plan_lsp.policy.sandbox.layout import CREDENTIAL_VARIABLES, hideable, plan_layout
from tests.lsp_harness import running_server
from tests.sandbox_support import require, run_in, small_workspace


@pytest.fixture
def odd_files(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """A FIFO, a listening Unix socket and a link to /dev/null."""
    odd = tmp_path / "odd"
    odd.mkdir()
    fifo = odd / "fifo"
    os.mkfifo(fifo)
    sock_path = odd / "sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(sock_path))
    link = odd / "null-link"
    link.symlink_to("/dev/null")
    try:
        yield {"fifo": fifo, "socket": sock_path, "link to /dev/null": link}
    finally:
        sock.close()


UNHIDEABLE = [
    "/dev/null", "/dev/zero", "/dev", "/dev/shm", "/proc", "/proc/self/environ", "/sys",
    "/sys/kernel", "/", "/usr", "/etc", "/var", "/usr/..", "relative/path", "", "/nonexistent",
]  # fmt: skip


@pytest.mark.parametrize("value", UNHIDEABLE)
def test_values_that_name_nothing_to_hide(value: str) -> None:
    assert hideable(value) is None


def test_fifos_sockets_and_links_to_devices_are_not_hidden(odd_files: dict[str, Path]) -> None:
    for what, path in odd_files.items():
        assert hideable(path) is None, what


def test_regular_files_and_directories_are_hidden_by_their_real_path(tmp_path: Path) -> None:
    secret = tmp_path / "key.json"
    secret.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(secret)
    assert hideable(secret) == secret.resolve()
    assert hideable(link) == secret.resolve()
    assert hideable(tmp_path) == tmp_path.resolve()
    assert hideable("/etc/os-release") is not None or not Path("/etc/os-release").exists()


def _odd_environment(tmp_path: Path, odd_files: dict[str, Path]) -> dict[str, str]:
    """Every credential variable and the home naming something that cannot be hidden."""
    values = [*UNHIDEABLE, *(str(p) for p in odd_files.values())]
    env = {"PATH": os.environ["PATH"], "HOME": "/dev/null", "XDG_CONFIG_HOME": "/proc"}
    for n, name in enumerate(CREDENTIAL_VARIABLES):
        env[name] = values[n % len(values)]
    env["KUBECONFIG"] = os.pathsep.join(values)  # a list, as kubectl reads it
    return env


def test_the_layout_hides_none_of_them(tmp_path: Path, odd_files: dict[str, Path]) -> None:
    env = _odd_environment(tmp_path, odd_files)
    layout = plan_layout([tmp_path], env)
    assert layout.credentials == ()
    everything = [*layout.hidden_dirs, *layout.hidden_files]
    for path in everything:
        assert not str(path).startswith(("/dev", "/proc", "/sys")), path
        assert hideable(path) == path


def _scratch(tmp_path: Path, mechanism: Mechanism) -> Path | None:
    """Landlock's one writable directory, apart from the workspace."""
    if mechanism != LANDLOCK:
        return None
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return scratch


@pytest.mark.parametrize("mechanism", [BUBBLEWRAP, LANDLOCK])
def test_the_sandbox_still_holds_and_works(
    mechanism: Mechanism,
    tmp_path: Path,
    odd_files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The self-test proves the mechanism with all of them set, and a command inside can use
    /dev/null, read the workspace and still not see a real credentials file."""
    require(mechanism)
    env = _odd_environment(tmp_path, odd_files)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    status = probe_sandbox([mechanism])
    assert status.mechanism == mechanism, status.detail
    ws = small_workspace(tmp_path, "visible\n")
    (ws / "key.json").write_text("SECRET\n")
    env["GOOGLE_APPLICATION_CREDENTIALS"] = str(ws / "key.json")
    proc = run_in(
        mechanism,
        ws,
        "echo discarded > /dev/null && cat hello.txt; cat key.json; echo end",
        env=env,
        scratch=_scratch(tmp_path, mechanism),
    )
    assert proc.stdout.split() == ["visible", "end"], proc.stderr


@pytest.mark.parametrize("mechanism", [BUBBLEWRAP, LANDLOCK])
def test_a_credentials_directory_holding_the_workspace(
    mechanism: Mechanism, tmp_path: Path
) -> None:
    """`GNUPGHOME` naming a directory that contains the workspace: its other files stay
    hidden, the workspace stays visible."""
    require(mechanism)
    holder = tmp_path / "holder"
    holder.mkdir()
    ws = small_workspace(holder, "visible\n")
    (holder / "private.key").write_text("SECRET\n")
    env = {**os.environ, "GNUPGHOME": str(holder)}
    layout = plan_layout([ws], env)
    assert holder.resolve() in layout.hidden_dirs and holder.resolve() not in layout.credentials
    proc = run_in(
        mechanism, ws, f"cat hello.txt; cat {holder}/private.key; echo end", env=env,
        scratch=_scratch(tmp_path, mechanism),
    )  # fmt: skip
    assert proc.stdout.split() == ["visible", "end"], proc.stderr


async def test_the_test_harness_servers_run_under_bubblewrap(tmp_path: Path) -> None:
    """`tests/lsp_harness.py` starts every server with `PLAN_LSP_CONFIG=/dev/null`: those
    servers, the end-to-end tests' and the editors', must get the sandbox this machine has."""
    require(BUBBLEWRAP)
    ws = small_workspace(tmp_path, "x\n")
    async with running_server([ws], "--provider", "scripted") as ed:
        state = await ed.settled_state()
    assert state["sandbox"] == BUBBLEWRAP, state
    assert state["planShell"] == "sandboxed"


@pytest.mark.parametrize("mechanism", [BUBBLEWRAP, LANDLOCK])
@pytest.mark.parametrize("variable", ["XDG_STATE_HOME", "XDG_CONFIG_HOME"])
def test_the_users_own_plan_lsp_folders_are_hidden_wherever_they_are(
    mechanism: Mechanism, variable: str, tmp_path: Path
) -> None:
    """The state key (it seals every workspace's state.db) and the user configuration (MCP
    servers, API keys) live in `$XDG_STATE_HOME/plan-lsp` and `$XDG_CONFIG_HOME/plan-lsp`,
    which need not be under a home directory; made after the first command ran, too. (Here
    inside the workspace, which the sandbox shows: outside it, /tmp is hidden anyway.)"""
    require(mechanism)
    ws = small_workspace(tmp_path, "visible\n")
    base = ws / "xdg"
    env = {**os.environ, variable: str(base)}
    scratch = _scratch(tmp_path, mechanism)
    first = run_in(mechanism, ws, "cat hello.txt", env=env, scratch=scratch)
    assert first.stdout.split() == ["visible"], first.stderr
    (base / "plan-lsp").mkdir(parents=True)
    (base / "plan-lsp" / "state-key").write_text("SECRET\n")
    script = f"cat hello.txt; cat {base}/plan-lsp/state-key; ls {base}/plan-lsp; echo end"
    proc = run_in(mechanism, ws, script, env=env, scratch=scratch)
    assert proc.stdout.split() == ["visible", "end"], (proc.stdout, proc.stderr)


def test_home_credentials_shown_again_by_a_root_or_a_link_are_hidden(tmp_path: Path) -> None:
    """The home's cover (a tmpfs, no Landlock grant) stops where a root shows part of the
    home again, and at a link to a place outside it: those credentials are named."""
    home = tmp_path / "home"
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".config" / "gh" / "hosts.yml").write_text("token\n")
    elsewhere = tmp_path / "vault" / "ssh"
    elsewhere.mkdir(parents=True)
    (home / ".ssh").symlink_to(elsewhere)
    (home / ".aws").mkdir()  # inside the home, no root shows it: its cover holds
    ws = home / ".config"
    layout = plan_layout([ws], {"PATH": os.environ["PATH"], "HOME": str(home)})
    assert (home / ".config" / "gh").resolve() in layout.credentials
    assert elsewhere.resolve() in layout.credentials
    assert (home / ".aws").resolve() not in layout.credentials
