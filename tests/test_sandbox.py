"""The bubblewrap sandbox: the plan profile is a wall, the build profile guards .plan-lsp,
the start-up self-test catches a sandbox that does not hold.

Behaviour tests need bubblewrap: they skip without it, and FAIL when CI=true."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import plan_lsp
from plan_lsp.policy.sandbox import (
    SandboxStatus,
    SandboxUnavailable,
    probe_sandbox,
    sandbox_argv,
    sandbox_kind,
    sandbox_status,
)
from plan_lsp.policy.sandbox import probe as sandbox_probing
from plan_lsp.policy.sandbox.bwrap import PRIVATE_TMP, SECCOMP_PRELUDE, plan_argv
from plan_lsp.policy.sandbox.layout import (
    NOBODY,
    TMPFS_BYTES,
    home_dir,
    plan_environment,
    plan_layout,
    runtime_path,
    safe_path_variable,
)
from plan_lsp.policy.sandbox.selftest import probe_plan
from tests.sandbox_support import (
    KEYRING_READER,
    fake_home,
    listener,
    require,
    run_in,
    session_key,
    small_workspace,
)


def _run(workdir: Path, script: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return run_in("bubblewrap", workdir, script, **kw)  # type: ignore[arg-type]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return small_workspace(tmp_path, "hello from the workspace\n")


# -- the command line (no bubblewrap needed) ----------------------------------------------


def _pairs(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


def test_plan_argv_follows_the_recipe(tmp_path: Path) -> None:
    home = fake_home(tmp_path)
    ws = home / "project"
    ws.mkdir()
    env = {"HOME": str(home), "PATH": f"/usr/bin:/bin:relative:{home}/.cargo/bin",
           "OPENAI_API_KEY": "sk-secret", "PLAN_LSP_MODEL": "m", "LC_ALL": "C"}  # fmt: skip
    argv = plan_argv(ws, ["ls", "-la"], base_env=env)
    # A fixed prelude opens the seccomp filter on fd 3, then `env -i` starts bwrap.
    assert argv[1:5] == ["-p", "-c", SECCOMP_PRELUDE, "plan-lsp-seccomp"]
    env_at = argv.index("-i") - 1
    assert argv[env_at].endswith("env") and env_at == 6
    bwrap_at = next(i for i, a in enumerate(argv) if a.endswith("bwrap"))
    assert argv[bwrap_at + 1 : bwrap_at + 3] == ["--seccomp", "3"]
    variables = dict(a.split("=", 1) for a in argv[env_at + 2 : bwrap_at])
    # The workspace lies under /tmp here: the command's scratch is a private tmpfs instead
    # (test_sandbox_ipc.py: /tmp cannot be granted for writing above a host tree).
    assert variables["HOME"] == variables["TMPDIR"] == PRIVATE_TMP
    assert variables["TERM"] == "dumb"
    assert variables["LC_ALL"] == "C" and variables["GIT_OPTIONAL_LOCKS"] == "0"
    assert "OPENAI_API_KEY" not in variables and "PLAN_LSP_MODEL" not in variables
    assert "relative" not in variables["PATH"].split(":")
    assert "sk-secret" not in " ".join(argv)
    joined = " ".join(argv)
    for part in (
        "--unshare-all --unshare-user --disable-userns",
        f"--uid {NOBODY} --gid {NOBODY} --cap-drop ALL",
        "--ro-bind / / --dev /dev --proc /proc",
        "--die-with-parent --new-session",
        f"--chdir {ws.resolve()}",
    ):
        assert part in joined
    assert "--share-net" not in argv
    tmpfs = _pairs(argv, "--tmpfs")
    assert {"/tmp", "/var/tmp", "/run", str(home.resolve())} <= set(tmpfs)
    binds = _pairs(argv, "--ro-bind")
    # The home is hidden first, then the workspace and the toolchain bound back into it.
    assert argv.index(str(home.resolve())) < argv.index(str(ws.resolve()))
    assert str(ws.resolve()) in binds and str((home / ".cargo" / "bin").resolve()) in binds
    assert str((home / ".cargo").resolve()) not in binds
    assert argv[-2:] == ["ls", "-la"]


def test_network_is_shared_only_when_asked(tmp_path: Path) -> None:
    argv = plan_argv(tmp_path, ["true"], network=True)
    assert argv[argv.index("--unshare-all") + 1] == "--share-net"


def test_limits_are_fixed_text_before_the_command(tmp_path: Path) -> None:
    argv = plan_argv(tmp_path, ["bash", "-c", "echo $0"])
    at = argv.index("plan-lsp-limits")
    script = argv[at - 1]
    assert "ulimit -c 0" in script and "ulimit -t" in script and "ulimit -f" in script
    assert script.endswith('exec "$@"')
    assert argv[at + 1 :] == ["bash", "-c", "echo $0"]


def test_build_argv_binds_every_state_directory_read_only(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / ".plan-lsp").mkdir()
    argv = sandbox_argv(a, ["true"], roots=[a, b], profile="build", mechanism="bubblewrap")
    joined = " ".join(argv)
    assert "--bind / /" in joined and "--cap-drop ALL" in joined and "--unshare-net" not in argv
    binds = _pairs(argv, "--ro-bind")
    assert str(a.resolve() / ".plan-lsp") in binds and str(b.resolve() / ".plan-lsp") in binds
    assert (b / ".plan-lsp").is_dir()  # created so that there is something to bind


def test_build_profile_needs_bubblewrap(tmp_path: Path) -> None:
    with pytest.raises(SandboxUnavailable):
        sandbox_argv(tmp_path, ["true"], profile="build", mechanism="landlock")


def test_layout_hides_homes_and_secrets_but_not_toolchains(tmp_path: Path) -> None:
    home = fake_home(tmp_path)
    creds = tmp_path / "ws" / "key.json"
    creds.parent.mkdir()
    creds.write_text("{}")
    env = {"HOME": str(home), "PATH": f"{home}/.cargo/bin:/usr/bin",
           "GOOGLE_APPLICATION_CREDENTIALS": str(creds)}  # fmt: skip
    layout = plan_layout([tmp_path / "ws"], env)
    assert home.resolve() in layout.hidden_dirs
    assert (home / ".cargo" / "bin").resolve() in layout.toolchains
    assert all(".ssh" not in str(t) and str(t) != str(home.resolve()) for t in layout.toolchains)
    assert creds.resolve() in layout.credentials
    if Path("/etc/shadow").exists():
        assert Path("/etc/shadow") in layout.hidden_files


def test_environment_is_an_allow_list() -> None:
    env = plan_environment(
        {
            "PATH": "/bin::.:bin:/usr/bin",
            "AWS_SECRET_ACCESS_KEY": "x",
            "LANG": "C.UTF-8",
            "BASH_ENV": "/evil",
            "GIT_EXTERNAL_DIFF": "evil",
            "LC_CTYPE": "C",
        }
    )
    assert env["PATH"] == "/bin:/usr/bin"
    assert "AWS_SECRET_ACCESS_KEY" not in env and "BASH_ENV" not in env
    assert "GIT_EXTERNAL_DIFF" not in env
    assert env["LANG"] == "C.UTF-8" and env["LC_CTYPE"] == "C" and env["HOME"] == "/tmp"
    assert safe_path_variable(":a:/b::") == "/b"


def test_mechanism_order_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    status = probe_sandbox([])
    assert status.mechanism is None and "classifier alone" in status.detail
    assert sandbox_probing._order("landlock") == ["landlock"]
    assert sandbox_probing._order("none") == []
    assert sandbox_probing._order(None) == ["bubblewrap", "landlock"]


# -- behaviour ----------------------------------------------------------------------------


@pytest.fixture
def bwrap() -> None:
    require("bubblewrap")


@pytest.mark.usefixtures("bwrap")
def test_reads_work_as_nobody(workdir: Path) -> None:
    proc = _run(workdir, "cat hello.txt && id -u")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["hello from the workspace", str(NOBODY)]


@pytest.mark.usefixtures("bwrap")
def test_writes_fail_read_only(workdir: Path) -> None:
    proc = _run(workdir, "echo x > new.txt")
    assert proc.returncode != 0
    assert "Read-only file system" in proc.stderr
    assert not (workdir / "new.txt").exists()
    proc = _run(workdir, "rm hello.txt; chmod 000 hello.txt; touch -d 2000-01-01 hello.txt")
    assert (workdir / "hello.txt").read_text() == "hello from the workspace\n"
    assert os.stat(workdir / "hello.txt").st_mode & 0o444


@pytest.mark.usefixtures("bwrap")
def test_no_capabilities_no_remount_no_nested_namespaces(workdir: Path) -> None:
    proc = _run(
        workdir,
        "grep CapEff /proc/self/status; mount -o remount,rw / && echo remounted; "
        "unshare -U true && echo nested; touch /remount-probe",
    )
    assert "CapEff:\t0000000000000000" in proc.stdout
    assert "remounted" not in proc.stdout and "nested" not in proc.stdout
    assert not Path("/remount-probe").exists()


@pytest.mark.usefixtures("bwrap")
def test_scratch_tmp_is_private(workdir: Path) -> None:
    # $TMPDIR: the workspace lies under /tmp here, so the scratch space is a private tmpfs
    # at another place (test_sandbox_ipc.py); /tmp itself when it holds no host tree.
    script = 'echo scratch > "${TMPDIR:-/tmp}/scratch.txt" && cat "${TMPDIR:-/tmp}/scratch.txt"'
    proc = _run(workdir, script)
    assert proc.returncode == 0 and proc.stdout.strip() == "scratch", proc.stderr
    assert not Path("/tmp/scratch.txt").exists()


@pytest.mark.usefixtures("bwrap")
def test_limits_apply_inside(workdir: Path) -> None:
    proc = _run(workdir, "ulimit -c; ulimit -t; ulimit -f; ulimit -u")
    assert proc.stdout.split() == ["0", "600", "1048576", "1024"]
    proc = _run(workdir, "df -B1 --output=size /tmp | tail -1")
    assert int(proc.stdout) == TMPFS_BYTES  # scratch space is bounded too


@pytest.fixture
def unix_server(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "host.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    server.settimeout(10)

    def serve() -> None:
        try:
            conn, _ = server.accept()
            conn.sendall(b"reached\n")
            conn.close()
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path
    server.close()
    thread.join(timeout=5)


@pytest.mark.usefixtures("bwrap")
def test_unix_socket_in_host_tmp_is_unreachable(workdir: Path, unix_server: Path) -> None:
    assert str(unix_server).startswith("/tmp/")
    script = (
        "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); "
        f"s.connect(sys.argv[1]); print(s.recv(16).decode())' {unix_server}"
    )
    proc = _run(workdir, script)
    assert proc.returncode != 0
    assert "reached" not in proc.stdout
    outside = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=30, check=False
    )
    assert "reached" in outside.stdout


@pytest.mark.usefixtures("bwrap")
def test_network_fails_unless_asked(workdir: Path) -> None:
    with listener() as server:
        script = f"exec 3<>/dev/tcp/127.0.0.1/{server.port} && echo connected"
        closed = _run(workdir, script)
        opened = _run(workdir, script, network=True)
    assert "connected" not in closed.stdout and closed.returncode != 0
    assert "connected" in opened.stdout
    assert server.connections == 1


@pytest.mark.usefixtures("bwrap")
def test_server_environment_is_invisible(workdir: Path) -> None:
    secret = "sk-" + os.urandom(8).hex()
    env = {**os.environ, "OPENAI_API_KEY": secret, "PLAN_LSP_API_KEY": secret}
    proc = _run(
        workdir,
        "env; cat /proc/[0-9]*/environ | tr '\\0' '\\n'; "
        'cat "/proc/$1/environ"; ls /proc | grep -c "^[0-9]"',
        env=env,
        args=[str(os.getpid())],
    )
    assert secret not in proc.stdout
    assert int(proc.stdout.split()[-1]) < 10  # its own pid namespace


@pytest.mark.usefixtures("bwrap")
def test_homes_are_hidden_and_the_workspace_stays_visible(tmp_path: Path) -> None:
    home = fake_home(tmp_path)
    ws = home / "project"
    ws.mkdir()
    (ws / "file.txt").write_text("inside\n")
    env = {**os.environ, "HOME": str(home), "PATH": f"{home}/.cargo/bin:{os.environ['PATH']}"}
    proc = _run(ws, f"cat file.txt; ls -A {home}; cat {home}/.cargo/bin/tool", env=env)
    assert proc.stdout.splitlines() == ["inside", ".cargo", "project", "toolchain"], proc.stderr
    real_home = home_dir()
    if real_home is not None and real_home.is_dir():
        visible = _run(tmp_path, f"ls -A {real_home}").stdout.split()
        allowed = {p.relative_to(real_home).parts[0] for p in plan_layout([]).toolchains
                   if real_home in p.parents}  # fmt: skip
        assert set(visible) <= allowed, visible


@pytest.mark.usefixtures("bwrap")
def test_credentials_named_by_the_environment_are_hidden(workdir: Path) -> None:
    (workdir / "key.json").write_text('{"private_key": "SECRET"}\n')
    env = {**os.environ, "GOOGLE_APPLICATION_CREDENTIALS": str(workdir / "key.json")}
    proc = _run(workdir, "cat key.json; cat hello.txt", env=env)
    assert "SECRET" not in proc.stdout and "hello from the workspace" in proc.stdout
    if Path("/etc/shadow").exists():
        assert _run(workdir, "cat /etc/shadow").stdout == ""


@pytest.mark.usefixtures("bwrap")
def test_build_profile_writes_everywhere_but_state(workdir: Path) -> None:
    (workdir / ".plan-lsp").mkdir()
    (workdir / ".plan-lsp" / "state.db").write_text("db")
    proc = _run(
        workdir,
        "echo new > new.txt; echo x > .plan-lsp/state.db; rm .plan-lsp/state.db; "
        "umount .plan-lsp; mount -o remount,rw .plan-lsp; echo y > .plan-lsp/state.db; "
        "echo done",
        profile="build",
    )
    assert "done" in proc.stdout
    assert (workdir / "new.txt").read_text() == "new\n"
    assert (workdir / ".plan-lsp" / "state.db").read_text() == "db"


@pytest.mark.usefixtures("bwrap")
def test_build_profile_cannot_change_the_users_plan_lsp_folders_or_the_server(
    workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build-mode command may write the workspace and the rest of the machine, but not
    what would disarm later sessions: the user's configuration and state key, the server's
    private directory (the git shim) and its code (the launchers run fresh per command).
    The interpreter's environment stays writable (it may be the project's own)."""
    config_home, state_home = tmp_path / "config", tmp_path / "state"
    for base in (config_home, state_home):
        (base / "plan-lsp").mkdir(parents=True)
        (base / "plan-lsp" / "file").write_text("kept\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    monkeypatch.setenv("XDG_STATE_HOME", str(state_home))
    package = Path(plan_lsp.__file__).resolve().parent
    runtime = runtime_path("x").parent
    targets = [
        config_home / "plan-lsp" / "file",
        state_home / "plan-lsp" / "file",
        runtime / "planted",
        package / "planted.py",
    ]
    writes = "; ".join(f"echo x > {t}" for t in targets)
    proc = _run(workdir, f"{writes}; echo new > new.txt; echo done", profile="build")
    assert "done" in proc.stdout and (workdir / "new.txt").read_text() == "new\n"
    assert (config_home / "plan-lsp" / "file").read_text() == "kept\n"
    assert (state_home / "plan-lsp" / "file").read_text() == "kept\n"
    for planted in targets[2:]:
        assert not planted.exists(), planted
    venv_file = Path(sys.prefix) / f"planted-{os.getpid()}"
    try:
        _run(workdir, f"echo x > {venv_file}", profile="build")
        assert venv_file.exists()
    finally:
        venv_file.unlink(missing_ok=True)


# -- the self-test ------------------------------------------------------------------------


@pytest.mark.usefixtures("bwrap")
def test_self_test_proves_bubblewrap() -> None:
    status = probe_sandbox(["bubblewrap"])
    assert status.mechanism == "bubblewrap" and status.build_profile
    assert "a Unix-socket connect and a FIFO write failed" in status.detail
    assert " ms" in status.detail
    assert sandbox_kind() == sandbox_status().mechanism


def test_self_test_refuses_no_sandbox(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    result = probe_plan(lambda workdir, argv, scratch: list(argv))
    assert not result.ok and "write went through" in result.why
    assert list(home.iterdir()) == []  # the probe cleans up what got through


@pytest.mark.usefixtures("bwrap")
def test_self_test_catches_a_visible_environment() -> None:
    def leaky(workdir: Path, argv: object, scratch: Path) -> list[str]:
        # The same sandbox, started without `env -i`: bwrap inherits the server's variables.
        full = sandbox_argv(workdir, list(argv), mechanism="bubblewrap")  # type: ignore[call-overload]
        env_at = full.index("-i") - 1
        bwrap_at = next(i for i, a in enumerate(full) if a.endswith("bwrap"))
        return full[:env_at] + full[bwrap_at:]

    result = probe_plan(leaky)
    assert not result.ok and "environment" in result.why


@pytest.mark.usefixtures("bwrap")
def test_self_test_catches_a_network() -> None:
    def networked(workdir: Path, argv: object, scratch: Path) -> list[str]:
        return plan_argv(workdir, list(argv), network=True)  # type: ignore[call-overload]

    result = probe_plan(networked)
    assert not result.ok and "TCP" in result.why


def test_no_mechanism_means_no_sandboxed_argv(monkeypatch: pytest.MonkeyPatch) -> None:
    from plan_lsp.policy.sandbox import known

    monkeypatch.setattr(known, "sandbox_status", lambda: SandboxStatus(None, "none"))
    with pytest.raises(SandboxUnavailable):
        sandbox_argv(Path("/"), ["true"])


@pytest.mark.usefixtures("bwrap")
def test_a_workspace_that_contains_the_home_still_hides_its_credentials(tmp_path: Path) -> None:
    home = fake_home(tmp_path)
    env = {**os.environ, "HOME": str(home)}
    layout = plan_layout([home], env)
    assert (home / ".ssh").resolve() in layout.credentials
    proc = _run(
        home, "ls -A; cat .ssh/id_ed25519 .aws/credentials .cargo/credentials.toml", env=env
    )
    assert "PRIVATE KEY" not in proc.stdout and "SECRET" not in proc.stdout
    assert ".cargo" in proc.stdout.split()


@pytest.mark.usefixtures("bwrap")
def test_older_bubblewrap_without_optional_features(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plan_lsp.policy.sandbox import bwrap as bwrap_mod

    monkeypatch.setattr(bwrap_mod, "bwrap_features", lambda: frozenset())
    argv = plan_argv(workdir, ["true"])
    assert "--size" not in argv and "--disable-userns" not in argv
    proc = _run(workdir, "cat hello.txt; touch x")
    assert "hello from the workspace" in proc.stdout and not (workdir / "x").exists()
    assert bwrap_mod.missing_features() == ["--disable-userns", "--size"]


@pytest.mark.usefixtures("bwrap")
def test_the_server_keyring_is_out_of_reach(workdir: Path) -> None:
    keyctl, key = session_key("keyring-secret")
    outside = subprocess.run(
        ["python3", "-c", KEYRING_READER, str(keyctl), str(key)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert "keyring-secret" in outside.stdout  # control: readable without the sandbox
    proc = _run(workdir, f'python3 -c "$1" {keyctl} {key}', args=[KEYRING_READER])
    assert "keyring-secret" not in proc.stdout
