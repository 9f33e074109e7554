"""Hiding (docs/security.md §2): the user's plan-lsp folders, `$XDG_CONFIG_HOME/plan-lsp`
(MCP servers, API keys) and `$XDG_STATE_HOME/plan-lsp` (every workspace's session state:
conversations, approvals), are "hidden wherever they are, even inside a root". A secret
planted in the state folder (`state-key`, standing for another workspace's state) must never
come back.

`layout.plan_layout` names them only from the XDG variables. When a variable is unset (the
usual case) the folders are the platform defaults, `~/.config/plan-lsp` and
`~/.local/state/plan-lsp`, hidden only by the home's tmpfs (bubblewrap) or the home's
missing grant (Landlock), and re-hidden after the roots are bound back only when the whole
home is inside a root (`HOME_SECRETS`). A workspace that is a folder *of* the home holding
them (a dotfiles repository at `~/.config`, or `~/.local`) is bound back read-only with
them inside."""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.lsp_harness import running_server
from tests.redteam._repos import one_call_script
from tests.sandbox_support import require


async def _plan_call(
    tmp_path: Path,
    ws: Path,
    tool: str,
    arguments: dict[str, str],
    *,
    env: dict[str, str],
    plan_shell: str,
    key: Path,
) -> str:
    """Runs one call of `tool` in plan mode through the server and returns the tool's
    results as JSON. `key`, a secret in the user's state folder, is planted first; the
    server must keep its own state beside it (the folder is the one it really uses)."""
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_text(secrets.token_hex(32) + "\n")
    script = one_call_script(tmp_path, tool, **arguments)
    args = ["--provider", "scripted", "--script", str(script), "--plan-shell", plan_shell]
    async with running_server([ws], *args, env=env) as ed:
        assert (await ed.state())["mode"] == "plan"
        assert list(key.parent.glob("*/state.db")), f"the server keeps no state in {key.parent}"
        await ed.request("planLsp/prompt", {"text": "look around"}, timeout=90)
        results = [u for u in ed.updates_of("toolResult") if u.get("tool") == tool]
    assert results, f"{tool} was not called"
    return json.dumps(results)


async def _plan_bash(
    tmp_path: Path, home: Path, ws: Path, command: str, sandbox: str, key: Path
) -> str:
    """`command` through the plan-mode `bash` (sandbox forced, XDG variables unset,
    `HOME=home`, so the state folder is the default in the home)."""
    env = {"HOME": str(home), "XDG_STATE_HOME": "", "XDG_CONFIG_HOME": "",
           "PLAN_LSP_SANDBOX": sandbox}  # fmt: skip
    return await _plan_call(
        tmp_path, ws, "bash", {"command": command}, env=env, plan_shell="sandboxed", key=key
    )


@pytest.mark.parametrize("sandbox", ["bubblewrap", "landlock"])
async def test_the_state_key_is_readable_from_a_workspace_inside_the_home(
    sandbox: str, tmp_path: Path
) -> None:
    """Attacker: the user opens `~/.local` (or any folder holding `state/plan-lsp`, e.g. a
    dotfiles checkout at `~/.config` holds `plan-lsp/config.toml`) as a workspace; the
    injected model runs, in plan mode, `base64 -w0 state/plan-lsp/state-key`.

    Should: the state folder is hidden in every plan-mode command, wherever the workspace
    is (the same list as for a workspace holding the whole home). Found: what the state
    folder held came back in the tool result (then the key that sealed every workspace's
    state; now every workspace's conversations)."""
    require(sandbox)  # type: ignore[arg-type]
    home = tmp_path / "home"
    ws = home / ".local"
    ws.mkdir(parents=True)
    (ws / "README.md").write_text("# local\n")
    key = ws / "state" / "plan-lsp" / "state-key"
    results = await _plan_bash(
        tmp_path, home, ws, "base64 -w0 state/plan-lsp/state-key", sandbox, key
    )
    secret = base64.b64encode(key.read_bytes()).decode()
    assert secret not in results, (
        "a plan-mode command read the server's state key from a workspace inside the home"
    )


@pytest.mark.parametrize("sandbox", ["bubblewrap", "landlock"])
async def test_the_state_key_behind_a_link_in_the_home_is_readable(
    sandbox: str, tmp_path: Path
) -> None:
    """Attacker: the user keeps `~/.local/state/plan-lsp` as a symbolic link to a folder
    outside every home (a dotfile manager, a synced or encrypted volume: here a folder
    outside /tmp, /home and /root). `XDG_STATE_HOME` is unset, so the layout never names the
    state folder; only the link inside the hidden home is hidden, not its target. The
    injected model looks for `state-key` outside the homes and, in plan mode, runs
    `base64 -w0 <target>/state-key`.

    Should: the state folder the server really uses (resolved, as `hideable` does for the
    XDG variables) is hidden in every plan-mode command. Today: the key comes back."""
    require(sandbox)  # type: ignore[arg-type]
    outside_root = Path(__file__).resolve().parents[2] / "build"
    outside_root.mkdir(exist_ok=True)
    outside = Path(tempfile.mkdtemp(prefix="redteam-keys-", dir=outside_root))
    try:
        home = tmp_path / "home"
        (home / ".local" / "state").mkdir(parents=True)
        (outside / "plan-lsp").mkdir(mode=0o700)
        (home / ".local" / "state" / "plan-lsp").symlink_to(outside / "plan-lsp")
        ws = tmp_path / "ws"
        ws.mkdir()
        (ws / "README.md").write_text("# ws\n")
        key = outside / "plan-lsp" / "state-key"
        results = await _plan_bash(tmp_path, home, ws, f"base64 -w0 {key}", sandbox, key)
        secret = base64.b64encode(key.read_bytes()).decode()
        assert secret not in results, (
            "a plan-mode command read the server's state key through the target of the "
            "home's state-folder link"
        )
    finally:
        shutil.rmtree(outside, ignore_errors=True)


async def test_read_file_returns_the_state_key_kept_inside_the_workspace(tmp_path: Path) -> None:
    """Attacker: the state folder lies inside the workspace: `XDG_STATE_HOME` names a folder
    of it (e.g. the user opened `~/.local`, or keeps XDG folders in a synced project). The
    shell sandbox hides `$XDG_STATE_HOME/plan-lsp` "wherever it is, even inside a root";
    the injected model, in plan mode and even with `planShell = off`, calls the read-only
    `read_file("state/plan-lsp/state-key")` instead.

    Should: the same places the shell never sees (the state folder, the user configuration
    folder, credential files) are refused by the file tools (`read_file`, `grep`, `glob`,
    `list_dir`), naming why. Today: the key comes back as text."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# ws\n")
    key = ws / "state" / "plan-lsp" / "state-key"
    results = await _plan_call(
        tmp_path, ws, "read_file", {"path": "state/plan-lsp/state-key"},
        env={"XDG_STATE_HOME": str(ws / "state")}, plan_shell="off", key=key,
    )  # fmt: skip
    secret = key.read_text().strip()
    assert secret not in results, (
        "the read-only read_file tool returned the server's state key in plan mode"
    )
