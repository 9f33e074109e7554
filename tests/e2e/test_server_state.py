"""The foundation through the real server process: state methods, commands, bad params,
restore after SIGKILL with the state outside the workspace, a session restored only into its
own folder, corrupt databases, and two workspaces not sharing state."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from plan_lsp.session.state_home import workspace_key
from tests.e2e.scripts import PLAN_TEXT, sample_project, scripted_args, write_script
from tests.lsp_harness import Editor, kill_server, running_server


def _state_db(state_dir: Path, ws: Path) -> Path:
    """Where the server keeps `ws`'s state: the test's own user state folder."""
    return state_dir / workspace_key(ws) / "state.db"


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


async def test_initialize_advertises_experimental_capability(tmp_path: Path) -> None:
    async with running_server([tmp_path]) as ed:
        caps = ed.init_result.capabilities  # type: ignore[attr-defined]
        exp = caps.experimental
        assert "planLsp" in exp
        assert "planLsp/state" in exp["planLsp"]["methods"]
        assert "planLsp.toggleMode" in caps.execute_command_provider.commands


async def test_state_set_toggle_and_permission_mode(tmp_path: Path, state_dir: Path) -> None:
    async with running_server([tmp_path]) as ed:
        state = await ed.state()
        assert state["mode"] == "plan"
        assert state["permissionMode"] == "ask"
        assert state["planStatus"] == "none"
        assert state["planUri"].endswith("/.plan-lsp/plans/PLAN.md")
        assert state["running"] is False
        assert (await ed.request("planLsp/setMode", {"mode": "build"}))["mode"] == "build"
        assert (await ed.request("planLsp/toggleMode", {}))["mode"] == "plan"
        assert (await ed.command("planLsp.toggleMode"))["mode"] == "build"
        s = await ed.request("planLsp/setPermissionMode", {"permissionMode": "auto_edit"})
        assert s["permissionMode"] == "auto_edit"
        assert (await ed.state())["mode"] == "build"
    assert _state_db(state_dir, tmp_path).is_file()
    assert not (tmp_path / ".plan-lsp" / "state.db").exists()


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("planLsp/setMode", {"mode": "turbo"}, "mode"),
        ("planLsp/setMode", {}, "mode"),
        ("planLsp/setMode", {"mode": 3}, "mode"),
        ("planLsp/setPermissionMode", {"permissionMode": "sometimes"}, "permissionMode"),
        ("planLsp/setPermissionMode", {"mode": "ask"}, "permissionMode"),
        ("planLsp/state", {"workspaceUri": 7}, "workspaceUri"),
    ],
)
async def test_bad_params_name_the_field_and_server_survives(
    tmp_path: Path, method: str, params: dict[str, object], field: str
) -> None:
    async with running_server([tmp_path]) as ed:
        with pytest.raises(JsonRpcException) as info:
            await ed.request(method, params)
        assert info.value.code == -32602
        assert field in str(info.value)
        assert (await ed.state())["mode"] == "plan"


async def test_unknown_method_is_an_error_not_a_crash(tmp_path: Path) -> None:
    async with running_server([tmp_path]) as ed:
        with pytest.raises(JsonRpcException) as info:
            await ed.request("planLsp/noSuchThing", {})
        assert info.value.code == -32601
        assert (await ed.state())["sessionId"]


async def test_restart_after_sigkill_restores_state(tmp_path: Path, state_dir: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("print('hi')\n")
    async with running_server([ws]) as ed:
        await ed.state()
        # Start-up and a state request leave the workspace as it was.
        assert _files(ws) == ["app.py"]
        first = await ed.request("planLsp/setMode", {"mode": "build"})
        await ed.request("planLsp/setPermissionMode", {"permissionMode": "strict"})
        await kill_server(ed)
    async with running_server([ws]) as ed:
        state = await ed.state()
        assert state["sessionId"] == first["sessionId"]
        assert state["mode"] == "build"
        assert state["permissionMode"] == "strict"
    # The session lives in the user's state folder; the workspace holds no state.db and no
    # other file of the server's.
    assert _files(ws) == ["app.py"]
    con = sqlite3.connect(_state_db(state_dir, ws))
    kinds = [r[0] for r in con.execute("SELECT kind FROM events ORDER BY seq")]
    actors = [r[0] for r in con.execute("SELECT actor FROM events ORDER BY seq")]
    assert kinds == [
        "session_created",
        "mode_changed",
        "permission_mode_changed",
        "session_restored",
    ]
    assert actors[1] == "user" and actors[3] == "restore"


async def test_a_session_is_restored_only_into_the_folder_it_was_saved_for(
    tmp_path: Path,
) -> None:
    """Approved in build mode and `yolo`; the same folder gets it all back. Deleted and made
    again at the same path with the same files (ext4 even gives it the same inode number):
    a new session in plan mode, `ask`, nothing approved, and the user told once."""
    ws = sample_project(tmp_path / "ws")
    turns = [
        {"tool_calls": [{"name": "plan_write", "arguments": {"content": PLAN_TEXT}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
    ]
    args = scripted_args(write_script(tmp_path / "s.json", turns))
    async with running_server([ws], *args) as ed:
        result = await ed.request("planLsp/prompt", {"text": "plan it"})
        assert result["stopReason"] == "plan_submitted"
        await ed.request("planLsp/approvePlan", {"execute": False})
        saved = await ed.request("planLsp/setPermissionMode", {"permissionMode": "yolo"})
    assert (saved["mode"], saved["permissionMode"]) == ("build", "yolo")
    assert saved["approvedPlan"]["text"] == PLAN_TEXT
    files = {p.relative_to(ws): p.read_bytes() for p in ws.rglob("*") if p.is_file()}

    def told(ed: Editor) -> list[str]:
        return [m.message for m in ed.client.messages if "new session" in m.message]

    async with running_server([ws]) as ed:
        state = await ed.state()
        assert not told(ed)
    for key in ("sessionId", "mode", "permissionMode", "planStatus", "approvedPlan"):
        assert state[key] == saved[key], key
    shutil.rmtree(ws)
    for path, data in files.items():
        (ws / path).parent.mkdir(parents=True, exist_ok=True)
        (ws / path).write_bytes(data)
    notices = []
    for _start in range(2):
        async with running_server([ws]) as ed:
            state = await ed.state()
            notices.append(told(ed))
        assert state["sessionId"] != saved["sessionId"]
        assert (state["mode"], state["permissionMode"], state["planStatus"]) == (
            "plan",
            "ask",
            "none",
        )
        assert state["approvedPlan"] is None
    assert len(notices[0]) == 1 and "plan mode" in notices[0][0] and notices[1] == []


async def test_corrupt_database_is_moved_aside_and_user_warned(
    tmp_path: Path, state_dir: Path
) -> None:
    db = _state_db(state_dir, tmp_path)
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database" * 100)
    async with running_server([tmp_path]) as ed:
        assert (await ed.state())["mode"] == "plan"
        assert any("moved" in m.message for m in ed.client.messages)
    aside = list(db.parent.glob("state.db.corrupt-*"))
    assert aside and aside[0].read_bytes().startswith(b"this is not a database")


async def test_two_workspaces_do_not_share_state(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    async with running_server([a, b]) as ed:
        await ed.request("planLsp/setMode", {"mode": "build", "workspaceUri": b.as_uri()})
        sa = await ed.request("planLsp/state", {"workspaceUri": a.as_uri()})
        sb = await ed.request("planLsp/state", {"workspaceUri": b.as_uri()})
        assert sa["mode"] == "plan" and sb["mode"] == "build"
        assert sa["sessionId"] != sb["sessionId"]
        with pytest.raises(JsonRpcException):
            await ed.request("planLsp/state", {"workspaceUri": (tmp_path / "c").as_uri()})


async def test_config_sources_and_invalid_values(tmp_path: Path) -> None:
    (tmp_path / ".plan-lsp").mkdir()
    (tmp_path / ".plan-lsp" / "config.toml").write_text('max_steps = -3\nmode = "build"\n')
    async with running_server(
        [tmp_path],
        init_options={"permissionMode": "auto_edit", "planShell": "never"},
        env={"PLAN_LSP_MODE": "build", "PLAN_LSP_PERMISSION_MODE": "strict"},
    ) as ed:
        state = await ed.state()
        # initializationOptions beat the environment; the environment is trusted.
        assert state["permissionMode"] == "auto_edit"
        assert state["mode"] == "build"
        texts = " ".join(m.message for m in ed.client.messages)
        assert "max_steps" in texts and "plan_shell" in texts


async def test_log_level_from_the_environment_and_init_options(tmp_path: Path) -> None:
    quiet, loud = tmp_path / "quiet.log", tmp_path / "loud.log"
    async with running_server([tmp_path], "--log-file", str(quiet)) as ed:
        await ed.state()
    async with running_server(
        [tmp_path], "--log-file", str(loud), env={"PLAN_LSP_LOG_LEVEL": "debug"}
    ) as ed:
        await ed.state()
    async with running_server(
        [tmp_path], "--log-file", str(tmp_path / "init.log"), init_options={"logLevel": "debug"}
    ) as ed:
        await ed.state()
    assert " DEBUG " not in quiet.read_text()
    assert " DEBUG " in loud.read_text()
    assert " DEBUG " in (tmp_path / "init.log").read_text()
