"""The files every allow-listed program form really opens, traced (`strace -f`).

A program may be allow-listed for `classified` (no sandbox: the classifier is the only wall)
only if the files it opens are the ones the classifier checked. Each program's `examples`
from `programs.toml`, and for an entry without examples invocations generated from its
declared forms (each flag alone, operands by role), run exactly as a classified command runs
(`unsandboxed_plan_env`: the private home, the git shim; `host_limited`) in a scratch tree
built to provoke names a program derives: missing operands whose `.gz`/`.z`/`-z`/`.Z`/...
siblings are links to a secret outside, `%`-escaped names that decode to `../outside`, a user
home whose configuration (`.gitconfig` rewriting a remote with a token, `.jq`, `.curlrc`,
`RIPGREP_CONFIG_PATH`, ...) names the secret. The test fails when a program opens (or runs)
a path that resolves neither into the workspace nor the private home, nor onto the short
list of system paths below: every such open is a name the classifier never checked.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from plan_lsp.policy.sandbox import host_limited, unsandboxed_plan_env
from plan_lsp.policy.sandbox.layout import runtime_path
from plan_lsp.policy.shell.classifier import classify_command
from plan_lsp.policy.shell.database import Program, database, examples
from tests.needs import need_program

pytestmark = [pytest.mark.process, pytest.mark.slow]

# The system paths any program may open: its own code and libraries, the loader's and the C
# library's configuration, locale and time zone data, its own /proc entries, the null device.
# (The C library's user and resolver databases; /proc/self's entries but its links out.)
SYSTEM_PATHS = (
    "/usr/", "/lib/", "/lib64/", "/bin/", "/sbin/", "/etc/ld.so.cache", "/etc/ld.so.preload",
    "/etc/localtime", "/etc/locale.alias", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group",
    "/etc/hosts", "/etc/host.conf", "/etc/resolv.conf", "/etc/gai.conf", "/etc/magic",
    "/etc/magic.mgc",
    "/etc/userdb/", "/run/userdb/", "/run/systemd/userdb/", "/run/host/userdb/",
    "/etc/gitattributes", "/proc/self/", "/proc/thread-self/", "/proc/filesystems",
    "/sys/devices/system/cpu/", "/sys/fs/cgroup/", "/dev/null", "/dev/tty", "/dev/urandom",
)  # fmt: skip
# What /proc/self leads out through: never a system path.
_PROC_EXITS = re.compile(r"/proc/(self|thread-self)/(root|cwd|fd|task|map_files|\d)")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TOKEN = "CONFORMANCE-SECRET-7f3a"
BATCH = 25
# Each entry's flags are spread over this many invocations (every flag runs once).
FLAG_GROUPS = 4
COMMAND_TIMEOUT_S = 5
# Operand placeholders by role; for file roles, the names that provoke derived opens.
PROVOKING = ("notes", "%2E%2E/outside/secret", "notes.txt")
ROLE_VALUES = {
    "text": "alpha", "number": "1", "duration": "1", "datefmt": "+%Y", "sed": "p",
    "awk": "{print}", "jq": ".", "yq": ".", "command": "true", "find": ".",
}  # fmt: skip
_CALL = re.compile(r"^(\d+) +(?:<\.\.\. (\w+) resumed>|(\w+)\()(.*)$")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_FD = re.compile(r"^(-?\d+|AT_FDCWD)(?:<([^>]*)>)?")
_OPENS = frozenset({"open", "openat", "openat2", "creat", "execve", "execveat"})
_FORKS = frozenset({"clone", "clone3", "fork", "vfork"})


@dataclass
class Scratch:
    top: Path
    ws: Path
    home: Path
    private: Path
    marks: Path


def _tree(top: Path) -> Scratch:
    """The workspace, a secret outside it, a user home naming the secret everywhere."""
    outside, ws, home, private = top / "outside", top / "ws", top / "home", top / "private"
    for d in (outside, ws, home, private, top / "marks"):
        d.mkdir()
    secret = outside / "secret"
    secret.write_text(f"{TOKEN}\n")
    for rel, text in {
        ".gitconfig": f'[url "https://a:{TOKEN}@example.com/"]\n\tinsteadOf = https://example.com/\n'
        f"[include]\n\tpath = {secret}\n",
        ".jq": f'def x: "{TOKEN}";\n',
        ".curlrc": f"config = {secret}\n",
        ".wgetrc": f"input = {secret}\n",
        ".npmrc": f"userconfig = {secret}\n",
        ".config/git/config": f"[include]\n\tpath = {secret}\n",
        ".config/pip/pip.conf": f"[global]\nconfig = {secret}\n",
        "rgrc": f"--ignore-file={secret}\n",
        ".inputrc": f"$include {secret}\n",
    }.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    env = {"PATH": PATH, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com",
           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com"}  # fmt: skip
    files = {
        "notes.txt": "alpha beta\n", "README.md": "# demo\nalpha\n", "data.csv": "a,b\n1,2\n",
        "config.json": '{"a": 1}\n', "data.json": '{"a": 1}\n', "data.yaml": "a: 1\n",
        "a.xml": '<?xml version="1.0"?>\n<r><a>1</a></r>\n',
        "page.html": "<html><head><title>t</title></head></html>\n", "src/app.py": "x = 1\n",
    }  # fmt: skip
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    for rel in ("a.gz", "b.gz", "notes.txt.gz"):
        subprocess.run(["gzip", "-c", str(ws / "notes.txt")], stdout=(ws / rel).open("wb"),
                       check=True)  # fmt: skip
    subprocess.run(["tar", "czf", "archive.tar.gz", "notes.txt"], cwd=ws, check=True)
    (ws / "prog").write_bytes(Path("/bin/true").read_bytes())
    # What gzip and friends open instead of a missing `notes`: links out of the workspace.
    for suffix in (".gz", ".z", "-z", ".Z", "-gz", "_z", ".bz2", ".xz", ".lzma", ".zst", ".tgz"):
        (ws / f"notes{suffix}").symlink_to(f"../outside/secret{suffix}")
        (outside / f"secret{suffix}").symlink_to("secret")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "first"],
                 ["remote", "add", "origin", "https://example.com/demo.git"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=ws, env=env, check=True, capture_output=True)
    return Scratch(top, ws, home, private, top / "marks")


def _placeholders(prog: Program, path: str) -> list[str] | None:
    words: list[str] = []
    for role in prog.roles:
        if role.name == "command":
            words.append("true")
        elif role.name in ("path", "file", "rev"):
            words.append(path)
        elif role.name in ROLE_VALUES:
            words.append(ROLE_VALUES[role.name])
        else:
            return None
        if role.count == "+":
            words.append(words[-1])
    return words


def _generated(prog: Program) -> Iterator[str]:
    """Invocations from the declared forms: the operands alone (each provoking name), then
    every flag, in FLAG_GROUPS invocations."""
    head = shlex.split(prog.label)
    need = sorted(prog.requires)[:1]
    for path in PROVOKING:
        operands = _placeholders(prog, path)
        if operands is None:
            return
        yield shlex.join([*head, *need, *operands])
    operands = _placeholders(prog, "notes.txt") or []
    flags = sorted(n for n, o in prog.options.items() if o.arity == "none" and n not in need)
    for group in range(min(FLAG_GROUPS, len(flags))):
        yield shlex.join([*head, *need, *flags[group::FLAG_GROUPS], *operands])


def _forms() -> list[str]:
    db = database()
    found = [cmd for cmd, accepted in examples(db) if accepted]

    def visit(prog: Program) -> None:
        if prog.read_only and not prog.examples:
            found.extend(_generated(prog))
        for sub in prog.subcommands.values():
            visit(sub)

    for name, prog in db.programs.items():
        if prog.label == name:
            visit(prog)
    return list(dict.fromkeys(found))


def _listed(path: str, places: tuple[str, ...]) -> bool:
    """`path` is one of `places` or lies in one of those ending in `/`."""
    return any(path == p.rstrip("/") or (p.endswith("/") and path.startswith(p)) for p in places)


def _allowed(system: tuple[str, ...], scratch: Scratch, full: str, real: str) -> bool:
    plain = os.path.normpath(full)
    if _listed(plain, system) and not _PROC_EXITS.match(plain):
        return True
    return _listed(real, (*system, f"{scratch.ws}/", f"{scratch.private}/"))


def _escapes(log: str, scratch: Scratch, system: tuple[str, ...]) -> list[tuple[int, str]]:
    """(batch index, path) of every open or exec of a path outside what is allowed."""
    cwd: dict[str, str] = {}
    out: list[tuple[int, str]] = []
    index = -1
    for line in log.splitlines():
        m = _CALL.match(line)
        if m is None:
            continue
        pid, call, rest = m.group(1), m.group(2) or m.group(3), m.group(4)
        ret = rest.rsplit(" = ", 1)[-1] if " = " in rest else ""
        if call in _FORKS and ret.split(" ")[0].isdigit():
            cwd[ret.split(" ")[0]] = cwd.get(pid, str(scratch.ws))
            continue
        if m.group(2):  # resumed: its path was on the unfinished line
            continue
        names = _QUOTED.findall(rest)
        if call in ("chdir", "fchdir") and ret.startswith("0"):
            if call == "chdir" and names:
                cwd[pid] = os.path.join(cwd.get(pid, str(scratch.ws)), names[0])
            elif fd := _FD.match(rest):
                cwd[pid] = fd.group(2) or cwd.get(pid, str(scratch.ws))
            continue
        if call not in _OPENS or not names or "O_PATH" in rest:
            continue  # (an O_PATH descriptor reads nothing)
        name = names[0].encode().decode("unicode_escape")
        if name.startswith(str(scratch.marks)):
            index = int(name.rsplit("-", 1)[1])
            continue
        base = cwd.get(pid, str(scratch.ws))
        if call.endswith("at") and (fd := _FD.match(rest)) and fd.group(2):
            base = fd.group(2)
        full = os.path.join(base, name)
        real = os.path.realpath(full)
        if "O_NOFOLLOW" in rest:
            real = os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))
        if not _allowed(system, scratch, full, real):
            out.append((index, f"{name} -> {real}" if real != name else name))
    return out


def _env(scratch: Scratch) -> dict[str, str]:
    """A classified command's environment, from a user's with configuration everywhere."""
    base = {"PATH": PATH, "HOME": str(scratch.home), "LANG": "C.UTF-8",
            "RIPGREP_CONFIG_PATH": str(scratch.home / "rgrc"),
            "LESSOPEN": f"|cat {scratch.top}/outside/secret"}  # fmt: skip
    return unsandboxed_plan_env(scratch.private, base)


def _run_batch(commands: list[str], scratch: Scratch, first: int, env: dict[str, str]) -> list[str]:
    lines = []
    for k, cmd in enumerate(commands):
        mark = scratch.marks / f"mark-{first + k}"
        lines.append(f": <{shlex.quote(str(mark))} 2>/dev/null")
        lines.append(
            f"timeout -s KILL {COMMAND_TIMEOUT_S} bash -c {shlex.quote(cmd)} "
            "</dev/null >/dev/null 2>&1"
        )
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as log:
        trace = ["strace", "-f", "--seccomp-bpf", "-qq", "-y", "-s", "4096", "-o", log.name,
                 "-e", "trace=%file,%process,fchdir"]  # fmt: skip
        argv = [*trace, *host_limited(["bash", "-c", "\n".join(lines)])]
        subprocess.run(
            argv, cwd=scratch.ws, env=env,
            stdin=subprocess.DEVNULL, capture_output=True, timeout=COMMAND_TIMEOUT_S * 60,
            check=False,
        )  # fmt: skip
        traced = log.read()
    system = (*SYSTEM_PATHS, f"{runtime_path('')}/")
    return [
        f"`{commands[i - first]}` opened {path}"
        for i, path in _escapes(traced, scratch, system)
        if i >= first
    ]


def test_every_allow_listed_form_opens_only_checked_files(tmp_path: Path) -> None:
    need_program("strace", "the conformance test traces the files programs open")
    scratch = _tree(tmp_path)
    ws = scratch.ws
    forms = [c for c in _forms() if classify_command(c, roots=[ws], cwd=ws).allowed]
    assert len(forms) > 500, len(forms)
    batches = [forms[i : i + BATCH] for i in range(0, len(forms), BATCH)]
    env = _env(scratch)
    with ThreadPoolExecutor(2) as pool:
        found = pool.map(
            lambda k: _run_batch(batches[k], scratch, k * BATCH, env), range(len(batches))
        )
        failures = sorted({f for batch in found for f in batch})
    assert failures == [], f"{len(failures)} opens outside:\n" + "\n".join(failures[:80])


def test_the_trace_sees_each_class_of_derived_name(tmp_path: Path) -> None:
    """Control: run unclassified, the three leaks found at `classified` are each reported."""
    scratch = _tree(tmp_path)
    leaks = ["xmllint --html %2E%2E/outside/secret", "zcat -f notes", "cat ~/../home/.jq"]
    failures = _run_batch(leaks, scratch, 0, _env(scratch))
    for cmd in leaks:
        assert any(f.startswith(f"`{cmd}`") for f in failures), (cmd, failures)
