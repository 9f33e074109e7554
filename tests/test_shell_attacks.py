"""The executing adversarial suite: every attack the classifier lets through really runs.

`tests/shell_attacks/<class>.txt` hold attacks (one per line, written as an attacker would,
with placeholders filled in here). For each protection level each attack is classified;
every ALLOWED one is executed through the real `bash` tool path (`run_shell`, inside the
plan sandbox under `sandboxed`) in a fresh, hostile scratch git repository, inside an
outer jail (see `shell_attacks/harness.py`). Then, from outside the jail:

- every scratch repository (files, modes, refs, index, config, hooks) is byte-identical,
- the canary directory, the fake HOME and the jail's /tmp are unchanged,
- the loopback listeners saw no connection or datagram,
- no secret (from the fake HOME's credential files or the server's environment) appeared
  in what the command printed, i.e. in what the model would read.

So a wrong label cannot hide an escape: the verdict comes from what happened. `sandboxed`
runs twice, with bubblewrap and with the Landlock fallback forced. A control run executes
known escapes unclassified and asserts the harness sees each of them.

Fails (not skips) without bubblewrap when CI=true.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from plan_lsp.policy.sandbox import probe_sandbox
from tests.sandbox_support import require
from tests.shell_attacks.harness import (
    CLASSES,
    HOME_WORKSPACE_CLASSES,
    MIN_ATTACKS,
    PORT,
    SRV_DIR,
    SUPERVISOR_PID,
    build_template,
    expand,
    fake_home,
    home_workspace,
    jail_argv,
    load_attacks,
    prepare_jail_tmp,
    unknown_placeholders,
)
from tests.shell_attacks.snapshot import differences, snapshot

SUPERVISOR = Path(__file__).parent / "shell_attacks" / "supervisor.py"
ATTACK_TIMEOUT_S = 5.0
JAIL_TIMEOUT_S = 600.0

# Known escapes, run without asking the classifier: the harness must see every one.
CONTROL = {
    "repo-write": "touch pwned",
    "repo-ref": "git update-ref refs/heads/evil HEAD",
    "canary-write": "echo x >> {CANARY}",
    "home-write": "echo x > {HOME}/.profile-evil",
    "connect": "exec 3<>/dev/tcp/127.0.0.1/{PORT}",
    "datagram": "echo x > /dev/udp/127.0.0.1/{PORT}",
    "leak-home": "cat {HOME}/.ssh/id_rsa",
    "leak-environ": "tr '\\0' '\\n' < /proc/{SERVER_PID}/environ",
    # The repository's own fsmonitor program, reached by going around the git shim.
    "hostile-git-config": "/usr/bin/git status",
    # Host IPC endpoints (shell_attacks/ipc.py): in the workspace and in the /srv-like tree.
    "unix-connect": 'python3 -c "import socket; '
    "socket.socket(socket.AF_UNIX).connect('svc.sock')\"",
    "unix-datagram": 'python3 -c "import socket; socket.socket(socket.AF_UNIX, '
    "socket.SOCK_DGRAM).sendto(b'x', '{SRV}/dgram.sock')\"",
    "fifo-write": "echo x > {SRV}/fifo",
}
IPC_CLASSES = ("host_ipc", "control")


@dataclass(frozen=True)
class Variant:
    name: str
    protection: str  # what the classifier is asked
    mechanism: str | None  # what runs the allowed commands (None: no sandbox)


VARIANTS = (
    Variant("classified", "classified", None),
    Variant("sandboxed-bubblewrap", "sandboxed", "bubblewrap"),
    Variant("sandboxed-landlock", "sandboxed", "landlock"),
)


@dataclass
class Attack:
    id: str
    cls: str
    text: str
    command: str = ""
    repo: Path = Path()
    allowed: bool = False
    reasons: list[str] = field(default_factory=list)
    outcome: dict[str, Any] = field(default_factory=dict)
    repo_changes: list[str] = field(default_factory=list)


@dataclass
class Run:
    variant: Variant
    attacks: list[Attack]
    fatal: str | None = None
    global_changes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    prepare_seconds: float = 0.0

    def escapes(self) -> list[str]:
        found = [f"{self.variant.name}: {self.fatal}"] if self.fatal else []
        for a in self.attacks:
            if not a.allowed:
                continue
            problems = [f"changed the scratch repository: {'; '.join(a.repo_changes[:5])}"]
            problems = problems if a.repo_changes else []
            o = a.outcome
            if not o:
                problems.append("never reported back (the supervisor died?)")
            if o.get("changes"):
                problems.append(f"changed a watched directory: {'; '.join(o['changes'][:5])}")
            if o.get("connections"):
                problems.append(f"reached the listener {o['connections']} time(s)")
            if o.get("ipc"):
                problems.append(f"reached a host socket or FIFO: {'; '.join(o['ipc'][:3])}")
            if o.get("leaked"):
                problems.append("printed a secret")
            if problems:
                found.append(f"{self.variant.name} [{a.id}] {a.command[:160]!r}: "
                             + " | ".join(problems))  # fmt: skip
        found.extend(f"{self.variant.name}: {c}" for c in self.global_changes)
        return found


class Workspace:
    """Host directories for one run: repositories, canary, fake HOME, the jail's /tmp."""

    def __init__(self, root: Path, token: str) -> None:
        self.root = root
        self.repos = root / "repos"
        self.canary_dir = root / "canary"
        self.canary = self.canary_dir / "canary.txt"
        self.home = root / "home"
        self.jail_tmp = root / "jailtmp"
        self.sup_tmp = root / "suptmp"
        self.hosts = root / "hosts"
        self.srv = root / "srv"  # host IPC endpoints, mounted in the jail at SRV_DIR
        for d in (self.repos, self.canary_dir, self.home, self.jail_tmp, self.sup_tmp, self.srv):
            d.mkdir(parents=True)
        self.canary.write_text("canary\n")
        fake_home(self.home, token)
        # Above every workspace: an ignore file that rg and fd read from every folder above
        # the one they search, printing the lines they cannot parse (this one, whole).
        (root / ".ignore").write_text(f"a{{b {token}!\n")
        # The user's home opened as the workspace (`home_workspace.txt`).
        self.user_home = root / "userhome"
        home_workspace(self.user_home, token)
        self.hosts.write_text("127.0.0.1 localhost attacker.example\n::1 localhost\n")
        prepare_jail_tmp(self.jail_tmp, root)
        self.template = root / "template"
        build_template(self.template, self.canary_dir, self.home)

    def values(self) -> dict[str, str]:
        return {
            "CANARY": str(self.canary),
            "CANARY_DIR": str(self.canary_dir),
            "PORT": str(PORT),
            "HOME": str(self.home),
            "SERVER_PID": str(SUPERVISOR_PID),
            "NL": "\n",
            "CR": "\r",
            "TAB": "\t",
            "SRV": SRV_DIR,
        }

    def watched(self) -> dict[str, dict[str, Any]]:
        return {
            "canary": snapshot(self.canary_dir),
            "home": snapshot(self.home),
            "home workspace": snapshot(self.user_home),
            "jail /tmp": snapshot(self.jail_tmp, dir_times=False),
        }


# The variants classify (and lay out their jails) in threads at once; the classifier finds the
# home in HOME, which a home-workspace attack sets for its own classification.
_CLASSIFYING = threading.Lock()


def _classify(
    command: str, protection: str, repo: Path, home: Path | None = None
) -> tuple[bool, list[str]]:
    from plan_lsp.policy.shell import classify_command

    try:
        with _CLASSIFYING, _home_named(home):
            result = classify_command(
                command, protection=protection, roots=[repo], cwd=repo, network=False
            )
    except TypeError:
        raise  # the classifier without the protection interface: fail loudly
    except Exception as exc:  # the classifier must never raise on input
        return True, [f"classifier raised {type(exc).__name__}: {exc}"]
    return bool(result.allowed), list(result.reasons)


@contextmanager
def _home_named(home: Path | None) -> Iterator[None]:
    saved = os.environ.get("HOME")
    if home is not None:
        os.environ["HOME"] = str(home)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["HOME"] = saved


def _attacks(ws: Workspace, variant: Variant) -> list[Attack]:
    """Every attack classified (the supervisor copies a fresh repository for each that runs).

    Classified against the template: the copy an attack runs in is made later, inside the
    jail, and a classifier looking at a folder that does not exist yet sees no files, links,
    glob matches or git configuration, unlike in real use."""
    found = []
    for cls in CLASSES:
        for n, text in enumerate(load_attacks(cls), 1):
            attack = Attack(id=f"{cls}:{n}", cls=cls, text=text)
            if cls in HOME_WORKSPACE_CLASSES:
                attack.repo = ws.user_home
                attack.command = expand(text, {**ws.values(), "HOME": str(ws.user_home)})
                attack.allowed, attack.reasons = _classify(
                    attack.command, variant.protection, ws.user_home, ws.user_home
                )
            else:
                attack.repo = ws.repos / f"{cls}-{n}"
                attack.command = expand(text, ws.values())
                attack.allowed, attack.reasons = _classify(
                    attack.command, variant.protection, ws.template
                )
            found.append(attack)
    return found


def _jail_env(ws: Workspace, token: str, variant: Variant) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(ws.home),
        "TMPDIR": str(ws.sup_tmp),
        "PYTHONDONTWRITEBYTECODE": "1",
        # The server's secrets, as a real server process would hold them.
        "OPENAI_API_KEY": token,
        "AWS_SECRET_ACCESS_KEY": token,
        "PLAN_LSP_API_KEY": token,
    }
    if variant.mechanism is not None:
        env["PLAN_LSP_SANDBOX"] = variant.mechanism
    return env


def _execute(ws: Workspace, token: str, variant: Variant, attacks: list[Attack]) -> Run:
    run = Run(variant, attacks)
    allowed = [a for a in attacks if a.allowed]
    pristine = snapshot(ws.template)
    watched_before = ws.watched()
    job = ws.root / f"job-{variant.name}.json"
    job.write_text(json.dumps({
        "token": token,
        "sandboxed": variant.mechanism is not None,
        "mechanism": variant.mechanism,
        "timeout": ATTACK_TIMEOUT_S,
        "port": PORT,
        "expect_pid": SUPERVISOR_PID,
        "template": str(ws.template),
        "watch": [str(ws.canary_dir), str(ws.home), str(ws.user_home), str(ws.jail_tmp)],
        "ipc_folders": [SRV_DIR],
        "attacks": [
            {"id": a.id, "command": a.command, "cwd": str(a.repo)}
            | ({"home": str(a.repo)} if a.cls in HOME_WORKSPACE_CLASSES else {})
            | ({"ipc": True} if a.cls in IPC_CLASSES else {})
            for a in allowed
        ],
    }))  # fmt: skip
    # The jail's layout reads HOME, which another variant's classification may have set to
    # its home workspace for a moment: the same lock keeps both apart.
    with _CLASSIFYING:
        argv = jail_argv(
            ws.root, ws.jail_tmp, ws.hosts, [sys.executable, str(SUPERVISOR), str(job)], srv=ws.srv
        )
    started = time.monotonic()
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env=_jail_env(ws, token, variant),
        timeout=JAIL_TIMEOUT_S,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    run.seconds = time.monotonic() - started
    by_id = {a.id: a for a in allowed}
    done = False
    for line in proc.stdout.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if "fatal" in item:
            run.fatal = item["fatal"]
        elif item.get("done"):
            done = True
        elif item.get("id") in by_id:
            by_id[item["id"]].outcome = item
    if not done and run.fatal is None:
        run.fatal = f"the supervisor did not finish (exit {proc.returncode}): {proc.stderr[-800:]}"
    for a in allowed:
        # A repository is copied only for an attack that started; the home workspace is
        # watched instead.
        if a.outcome and a.cls not in HOME_WORKSPACE_CLASSES:
            a.repo_changes = differences(pristine, snapshot(a.repo))
    watched_after = ws.watched()
    for name, before in watched_before.items():
        run.global_changes += [f"{name}: {c}" for c in differences(before, watched_after[name])]
    run.global_changes += [f"template: {c}" for c in differences(pristine, snapshot(ws.template))]
    if not run.escapes():
        shutil.rmtree(ws.repos, ignore_errors=True)  # now, not all at once at teardown
    return run


@pytest.fixture(scope="module")
def scratch_root() -> Iterator[tuple[Path, str]]:
    token = "SECRET-" + secrets.token_hex(12)
    root = Path(tempfile.mkdtemp(prefix="plan-lsp-attacks-"))
    try:
        yield root, token
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def runs(scratch_root: tuple[Path, str]) -> dict[str, Run]:
    """Every variant in its own workspace and jail (so a change is attributed to the
    variant that made it), the three jails concurrently."""
    require("bubblewrap")
    root, token = scratch_root
    from plan_lsp.policy.shell import classify_command

    classify_command("true")  # load the grammar once, not in three threads at once

    def one(variant: Variant) -> Run:
        started = time.monotonic()
        ws = Workspace(root / variant.name, token)
        attacks = _attacks(ws, variant)
        prepared = time.monotonic() - started
        run = _execute(ws, token, variant, attacks)
        run.prepare_seconds = prepared
        return run

    # A variant whose mechanism does not work here is left out; its test then fails under
    # CI and skips elsewhere (`require`).
    usable = [v for v in VARIANTS if v.mechanism is None or probe_sandbox([v.mechanism]).mechanism]
    with ThreadPoolExecutor(max_workers=len(usable)) as pool:
        futures = {v.name: pool.submit(one, v) for v in usable}
        results = {name: f.result() for name, f in futures.items()}
    _print_summary(results)
    return results


def _print_summary(results: dict[str, Run]) -> None:
    print("\nattack suite: allowed / total per class")
    for name, run in results.items():
        per_class = {
            cls: (sum(a.allowed for a in run.attacks if a.cls == cls),
                  sum(1 for a in run.attacks if a.cls == cls))
            for cls in CLASSES
        }  # fmt: skip
        cells = ", ".join(f"{cls} {a}/{t}" for cls, (a, t) in per_class.items())
        total = sum(a.allowed for a in run.attacks)
        print(
            f"  {name}: {total}/{len(run.attacks)} executed in {run.seconds:.1f} s "
            f"(prepared in {run.prepare_seconds:.1f} s; {cells})"
        )
        slow = sorted((a for a in run.attacks if a.outcome), key=lambda a: -a.outcome["ms"])[:5]
        print("    slowest: " + ", ".join(f"{a.id} {a.outcome['ms']} ms" for a in slow))


def test_every_class_has_enough_attacks() -> None:
    for cls in CLASSES:
        lines = load_attacks(cls)
        assert len(lines) >= MIN_ATTACKS, f"{cls}.txt has {len(lines)} attacks"
        assert len(set(lines)) == len(lines), f"{cls}.txt repeats an attack"
        for line in lines:
            assert not unknown_placeholders(line), f"{cls}.txt: {line}"


@pytest.mark.parametrize("variant", [v.name for v in VARIANTS])
def test_no_attack_escapes(runs: dict[str, Run], variant: str) -> None:
    mechanism = next(v.mechanism for v in VARIANTS if v.name == variant)
    if mechanism is not None:
        require(mechanism)  # type: ignore[arg-type]
    run = runs[variant]
    escapes = run.escapes()
    assert not escapes, f"{len(escapes)} escape(s):\n" + "\n".join(escapes)
    raised = [a for a in run.attacks if any("classifier raised" in r for r in a.reasons)]
    assert not raised, [(a.id, a.reasons) for a in raised]


def test_the_harness_sees_every_kind_of_escape(scratch_root: tuple[Path, str]) -> None:
    """Control: known escapes, executed unclassified and unsandboxed, are all detected."""
    require("bubblewrap")
    root, token = scratch_root
    ws = Workspace(root / "control", token)
    attacks = []
    for name, text in CONTROL.items():
        attack = Attack(id=name, cls="control", text=text, allowed=True)
        attack.repo = ws.repos / f"control-{name}"
        attack.command = expand(text, ws.values())
        attacks.append(attack)
    run = _execute(ws, token, Variant("control", "classified", None), attacks)
    assert run.fatal is None, run.fatal
    by_id = {a.id: a for a in run.attacks}
    assert by_id["repo-write"].repo_changes
    assert by_id["repo-ref"].repo_changes
    assert by_id["canary-write"].outcome["changes"]
    assert by_id["home-write"].outcome["changes"]
    assert by_id["connect"].outcome["connections"] >= 1
    assert by_id["datagram"].outcome["connections"] >= 1
    assert by_id["leak-home"].outcome["leaked"]
    assert by_id["leak-environ"].outcome["leaked"]
    assert by_id["hostile-git-config"].outcome["changes"]
    for name in ("unix-connect", "unix-datagram", "fifo-write"):
        assert by_id[name].outcome["ipc"], name
    reported = {e.split("[", 1)[1].split("]", 1)[0] for e in run.escapes() if "[" in e}
    assert reported == set(CONTROL)
