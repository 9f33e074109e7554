"""git opens the files of its own directory by itself, follows links and pointers there, and
prints what it reads. A hostile repository makes them point outside: without a sandbox
(`classified`), git is refused while anything in `.git` leaves the repository."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from plan_lsp.policy.sandbox import git_config_hazards
from plan_lsp.policy.sandbox.git_hazards import git_dir_hazards
from tests.needs import need_program


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return done.stdout + done.stderr


def _committed(root: Path, name: str) -> Path:
    """A new repository at `root` with one commit of the file `name`."""
    root.mkdir()
    _git(root, "init", "-q")
    (root / name).write_text(f"{name}\n")
    _git(root, "add", name)
    _git(root, "commit", "-qm", name)
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    need_program("git")
    return _committed(tmp_path / "repo", "a.txt")


def _secret(tmp_path: Path, text: str) -> Path:
    secret = tmp_path / "outside" / "secret"
    secret.parent.mkdir(exist_ok=True)
    secret.write_text(text)
    return secret


def _link(repo: Path, rel: str, target: Path) -> None:
    path = repo / ".git" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        subprocess.run(["rm", "-rf", str(path)], check=True)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.symlink_to(target)


Mutation = Callable[[Path, Path], str]


def _packed_refs(repo: Path, tmp: Path) -> str:
    head = _git(repo, "rev-parse", "HEAD").strip()
    _link(repo, "packed-refs", _secret(tmp, f"{head} refs/heads/TOKEN-pw\n"))
    return "packed-refs"


def _ref_file(repo: Path, tmp: Path) -> str:
    _link(repo, "refs/heads/leak", _secret(tmp, "not-a-hash TOKEN-pw\n"))
    return "refs/heads/leak"


def _refs_dir(repo: Path, tmp: Path) -> str:
    other = tmp / "other-refs"
    other.mkdir()
    _link(repo, "refs/tags", other)
    return "refs/tags"


def _objects_dir(repo: Path, tmp: Path) -> str:
    other = tmp / "other-objects"
    other.mkdir()
    _link(repo, "objects/info", other)
    return "objects/info"


def _state_file(name: str) -> Mutation:
    def mutate(repo: Path, tmp: Path) -> str:
        _link(repo, name, _secret(tmp, "TOKEN-pw\n"))
        return name

    return mutate


def _commondir(repo: Path, tmp: Path) -> str:
    (repo / ".git" / "commondir").write_text(str(tmp / "elsewhere" / ".git") + "\n")
    return "commondir"


def _worktree_gitdir(repo: Path, tmp: Path) -> str:
    record = repo / ".git" / "worktrees" / "wt"
    record.mkdir(parents=True)
    (record / "gitdir").write_text(str(_secret(tmp, "x")) + "\n")
    return "worktrees/wt/gitdir"


def _fifo(repo: Path, tmp: Path) -> str:
    os.mkfifo(repo / ".git" / "FETCH_HEAD")
    return "FETCH_HEAD"


MUTATIONS: dict[str, Mutation] = {
    "packed-refs link": _packed_refs,
    "ref file link": _ref_file,
    "refs folder link": _refs_dir,
    "objects folder link": _objects_dir,
    "shallow link": _state_file("shallow"),
    "grafts link": _state_file("info/grafts"),
    "bisect log link": _state_file("BISECT_LOG"),
    "rebase state link": _state_file("rebase-merge/head-name"),
    "ORIG_HEAD link": _state_file("ORIG_HEAD"),
    "reflog link": _state_file("logs/HEAD"),
    "commondir pointer": _commondir,
    "worktree gitdir pointer": _worktree_gitdir,
    "FIFO": _fifo,
}


@pytest.mark.parametrize("mutation", MUTATIONS, ids=list(MUTATIONS))
def test_anything_in_git_that_leaves_the_repository_is_a_named_hazard(
    repo: Path, tmp_path: Path, mutation: str
) -> None:
    assert git_dir_hazards(repo / ".git", repo) == []
    shown = MUTATIONS[mutation](repo, tmp_path)
    hazards = git_config_hazards(repo)
    assert any(f".git/{shown} " in h for h in hazards), hazards


def test_the_leak_is_real_without_the_check(repo: Path, tmp_path: Path) -> None:
    """What the check prevents: git prints a file outside the repository that a link in
    `.git` names (here as a branch name)."""
    _packed_refs(repo, tmp_path)
    assert "TOKEN-pw" in _git(repo, "branch", "-a")


def test_links_that_stay_inside_the_repository_are_fine(repo: Path) -> None:
    """A hook linked to the project's own script (a common setup) is not a hazard."""
    (repo / "scripts").mkdir()
    (repo / "scripts" / "pre-commit").write_text("#!/bin/sh\n")
    _link(repo, "hooks/pre-commit", Path("../../scripts/pre-commit"))
    assert git_config_hazards(repo) == []


async def test_classified_git_is_refused_in_such_a_repository(repo: Path, tmp_path: Path) -> None:
    """Through the real server, plan mode without a sandbox: refused, with the reason, and
    nothing of the outside file reaches the model."""
    from tests.e2e.scripts import requests_of, scripted_args, write_script
    from tests.lsp_harness import running_server

    _packed_refs(repo, tmp_path)
    turns = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "git branch -a"}}]},
        {"text": "done"},
    ]
    script = write_script(tmp_path / "script.json", turns)
    transcript = tmp_path / "t.jsonl"
    async with running_server([repo], *scripted_args(script, transcript)) as ed:
        result = await ed.request("planLsp/prompt", {"text": "branches?"})
        assert result["stopReason"] == "end_turn"
    observation = next(
        m["content"] for m in requests_of(transcript)[-1]["messages"] if m["role"] == "tool"
    )
    assert "TOKEN-pw" not in observation
    assert ".git/packed-refs is a link" in observation, observation


def _submodule(repo: Path, tmp_path: Path) -> Path:
    """A checked-out submodule `sub` (a gitlink in the index, no .gitmodules needed) with
    its own git directory in its folder."""
    sub = _committed(repo / "sub", "s.txt")
    _git(repo, "add", "sub")
    _git(repo, "commit", "-qm", "with sub")
    assert _git(repo, "ls-files", "--stage", "sub").startswith("160000 ")
    assert git_config_hazards(repo) == []
    return sub


def test_a_submodule_git_directory_is_checked_like_the_repository(
    repo: Path, tmp_path: Path
) -> None:
    """git status resolves a submodule's HEAD through its packed-refs: linked to a secret,
    git prints its short lines ("unexpected line in sub/.git/packed-refs")."""
    sub = _submodule(repo, tmp_path)
    secret = _secret(tmp_path, "db:5432:prod:admin:PGPASS\n")
    branch = _git(sub, "symbolic-ref", "--short", "HEAD").strip()
    (sub / ".git" / "refs" / "heads" / branch).unlink()
    (sub / ".git" / "packed-refs").symlink_to(secret)
    assert "PGPASS" in _git(repo, "status")  # what the check is for
    hazards = git_config_hazards(repo)
    assert any("packed-refs" in h and str(secret) in h for h in hazards), hazards


@pytest.mark.parametrize("how", ["pointer", "link"])
def test_a_submodule_leading_to_another_repository_is_refused(
    how: str, repo: Path, tmp_path: Path
) -> None:
    sub = _submodule(repo, tmp_path)
    other = tmp_path / "outside" / "other"
    other.mkdir(parents=True)
    _git(other, "init", "-q")
    subprocess.run(["rm", "-rf", str(sub / ".git")], check=True)
    if how == "pointer":
        (sub / ".git").write_text(f"gitdir: {other / '.git'}\n")
    else:
        (sub / ".git").symlink_to(other / ".git")
    hazards = git_config_hazards(repo)
    assert any("sub/.git" in h for h in hazards), hazards


def test_a_pack_index_linked_outside_is_refused(repo: Path, tmp_path: Path) -> None:
    """Pack indexes and multi-pack-index are parsed, and printed from when they are not what
    they say ("multi-pack-index signature 0x5b646566": the secret's first bytes)."""
    secret = _secret(tmp_path, "[default]\naws_secret_access_key = x\n")
    _link(repo, "objects/pack/multi-pack-index", secret)
    hazards = git_config_hazards(repo)
    assert any("multi-pack-index" in h for h in hazards), hazards


def test_the_check_itself_runs_nothing_the_repository_names(repo: Path, tmp_path: Path) -> None:
    """The check reads the index for submodules: reading it runs `core.fsmonitor` unless the
    shim's overrides come first. With a submodule, so that every step of the check runs."""
    _submodule(repo, tmp_path)
    marker = tmp_path / "fsmonitor-ran"
    hook = tmp_path / "fsmonitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    for where in (repo, repo / "sub"):
        _git(where, "config", "core.fsmonitor", str(hook))
    _git(repo, "status", "--short")
    assert marker.exists()  # what the repository's program does when git runs it
    marker.unlink()
    assert git_config_hazards(repo) == []
    assert not marker.exists(), "the hazard check ran the repository's core.fsmonitor"
