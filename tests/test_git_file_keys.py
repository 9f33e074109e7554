"""Every git configuration key that names a file, as this git lists them (`git help
--config`), is accounted for in plan mode: overridden by the git shim (`git.toml`), refused
when outside the workspace (`policy/shell/gitfiles.py`), checked by the classifier
(`include.path`, `policy/shell/verify.py`), or read by no subcommand the allow-list passes.
A git that adds such a key fails this test until someone decides which it is.

And what the overrides are for, traced: a repository whose configuration names a secret
outside the workspace as its attributes, excludes, mailmap and diff order file, and the
commands that read those files, run as plan mode runs them without a sandbox.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from plan_lsp.policy.sandbox.git import DYNAMIC_OVERRIDES, STATIC_OVERRIDES
from plan_lsp.policy.shell import classify_command
from plan_lsp.policy.shell.gitfiles import FILE_KEYS
from tests.needs import need_program

pytestmark = pytest.mark.process  # git and strace run

# The last word of a key naming a file or folder.
_FILE_WORD = re.compile(r"(file|path|dir|template|skiplist|target)$", re.I)

# Keys whose names end so but hold no file name.
NOT_A_FILE = frozenset({
    "advice.addIgnoredFile", "advice.amWorkDir", "advice.updateSparsePath", "core.quotePath",
    "credential.useHttpPath", "guitool.<name>.needsFile", "http.sslCipherList",
})  # fmt: skip
# Keys naming a file that no subcommand the allow-list passes reads, and why.
NOT_READ = {
    "commit.template": "commit changes the repository",
    "fetch.fsck.skipList": "fetch uses the network",
    "receive.fsck.skipList": "receive-pack is not allowed",
    "fsck.skipList": "fsck is not allowed",
    "format.signatureFile": "format-patch is not allowed",
    "gitcvs.logFile": "cvsserver is not allowed",
    "gpg.ssh.allowedSignersFile": "signatures are never verified (no --show-signature, %G)",
    "gpg.ssh.revocationFile": "signatures are never verified",
    "gui.newBranchTemplate": "git gui is not allowed",
    "help.htmlPath": "help --web runs a browser, which is overridden",
    "http.cookieFile": "http uses the network",
    "http.sslCAPath": "http uses the network",
    "init.templateDir": "init changes the file system",
    "instaweb.modulePath": "instaweb is not allowed",
    "sendemail.aliasesFile": "send-email is not allowed",
    "sendemail.smtpsslcertpath": "send-email is not allowed",
    "fsmonitor.socketDir": "core.fsmonitor is overridden off",
    "trace2.eventTarget": "git reads trace2 keys only from the system and global files",
    "trace2.normalTarget": "git reads trace2 keys only from the system and global files",
    "trace2.perfTarget": "git reads trace2 keys only from the system and global files",
    "fsck.gitmodulesPath": "fsck is not allowed",
    "receive.fsck.gitmodulesPath": "receive-pack is not allowed",
}
# Checked by the classifier where it matters (`git config`, `git remote`: verify.py).
INCLUDES = frozenset({"include.path", "includeIf.<condition>.path"})


def _git_keys() -> list[str]:
    git = need_program("git")
    out = subprocess.run([git, "help", "--config"], capture_output=True, text=True,
                         timeout=30, check=True).stdout  # fmt: skip
    return [k for k in out.split() if "." in k and _FILE_WORD.search(k)]


def _accounted(key: str) -> str | None:
    pattern = re.sub(r"<[^>]+>", "*", key)
    if any(k.lower() == key.lower() for k, _ in STATIC_OVERRIDES):
        return "overridden"
    if any(fnmatch.fnmatchcase(pattern, p) or fnmatch.fnmatchcase(p, pattern)
           for p, _ in DYNAMIC_OVERRIDES):  # fmt: skip
        return "overridden"
    if any(k == key for _, k in FILE_KEYS):
        return "refused outside"
    if key in INCLUDES or key in NOT_A_FILE or key in NOT_READ:
        return "listed"
    return None


def test_every_file_key_of_this_git_is_accounted_for() -> None:
    keys = _git_keys()
    assert "core.attributesFile" in keys and "mailmap.file" in keys, keys
    assert [k for k in keys if _accounted(k) is None] == []


def _git_in(ws: Path, home: Path) -> Callable[..., str]:
    """`git -C ws ARGS` with a fixed identity and no system or user configuration."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com",
           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com"}  # fmt: skip

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ws), *args], env=env, check=True, timeout=30,
                              capture_output=True, text=True).stdout.strip()  # fmt: skip

    return git


def test_files_the_repository_names_are_not_opened(tmp_path: Path) -> None:
    from plan_lsp.policy.sandbox import unsandboxed_plan_env

    strace = need_program("strace")
    secret = tmp_path / "outside" / ".netrc"
    secret.parent.mkdir()
    secret.write_text("machine example.com password Zx9@q#TOKEN/Pw\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    git = _git_in(ws, tmp_path)
    git("init", "-q")
    git("commit", "-q", "--allow-empty", "-m", "one")
    (ws / "a.txt").write_text("one\n")
    git("add", "a.txt")
    git("commit", "-qm", "two")
    (ws / "a.txt").write_text("two\n")
    with (ws / ".git" / "config").open("a") as config:
        config.write(f"[core]\n\tattributesFile = {secret}\n\texcludesFile = {secret}\n"
                     f"[mailmap]\n\tfile = {secret}\n[diff]\n\torderFile = {secret}\n")  # fmt: skip
    home = tmp_path / "private"
    home.mkdir(mode=0o700)
    plan_env = unsandboxed_plan_env(home, {**os.environ, "HOME": str(tmp_path)})
    commands = ("git diff", "git diff --stat", "git log -p -2", "git status --ignored",
                "git shortlog -se HEAD", "git check-ignore a.txt", "git show --stat")  # fmt: skip
    for command in commands:
        assert classify_command(command, roots=[ws], cwd=ws).allowed, command
        trace = tmp_path / "trace"
        done = subprocess.run(
            [strace, "-f", "-qq", "-e", "trace=%file", "-o", str(trace), "bash", "-c", command],
            cwd=ws, env=plan_env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert "TOKEN" not in done.stdout + done.stderr, (command, done.stderr)
        opened = [line for line in trace.read_text().splitlines() if str(secret) in line]
        assert opened == [], (command, opened[:3])


def test_a_partial_clone_reaches_no_transport(tmp_path: Path) -> None:
    """A repository that says it is a partial clone, lacking one blob, with a promisor remote
    whose `ext::` URL runs a command, and `protocol.ext.allow = always` (which beats the
    shim's `protocol.allow = never`): reading the blob must not fetch it."""
    from plan_lsp.policy.sandbox import unsandboxed_plan_env

    ws = tmp_path / "ws"
    ws.mkdir()
    git = _git_in(ws, tmp_path)
    git("init", "-q")
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b, fetched\n")
    git("add", "a.txt", "b.txt")
    git("commit", "-qm", "one")
    blob = git("rev-parse", "HEAD:b.txt")
    (ws / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    git("rm", "-q", "--cached", "b.txt")
    canary = tmp_path / "fetched"
    with (ws / ".git" / "config").open("a") as config:
        config.write("[core]\n\trepositoryformatversion = 1\n"
                     "[extensions]\n\tpartialClone = origin\n"
                     f'[remote "origin"]\n\tpromisor = true\n\turl = ext::sh -c touch% {canary}\n'
                     '[protocol "ext"]\n\tallow = always\n')  # fmt: skip
    home = tmp_path / "private"
    home.mkdir(mode=0o700)
    plan_env = unsandboxed_plan_env(home, {**os.environ, "HOME": str(tmp_path)})
    for command in ("git show", "git log -p -1", "git diff HEAD --stat"):
        assert classify_command(command, roots=[ws], cwd=ws).allowed, command
        subprocess.run(["bash", "-c", command], cwd=ws, env=plan_env, capture_output=True,
                       timeout=60, check=False)  # fmt: skip
        assert not canary.exists(), f"{command} ran the promisor remote's ext:: command"
