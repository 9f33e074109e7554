"""The README is read in five minutes and every link in it and in docs/ leads somewhere; the
figures the docs give are the ones the code and the install scripts use (unit tier: files
only). The demo transcript the README shows is checked against a real run in
tests/e2e/test_demo.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from plan_lsp.config import load_config

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
README_MAX_LINES = 200

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped,
    spaces to `-`."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def links(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return [m.group(1) for m in LINK.finditer(text)]


def test_slug_is_githubs() -> None:
    assert slug("Vim + coc.nvim") == "vim--cocnvim"
    assert slug("Neovim 0.11+ (native)") == "neovim-011-native"
    assert slug('How "in plan mode nothing changes" is enforced') == (
        "how-in-plan-mode-nothing-changes-is-enforced"
    )


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_readme_links_every_docs_page_a_newcomer_needs() -> None:
    targets = {link.split("#")[0] for link in links(README)}
    for page in ("editors", "configuration", "security", "protocol", "plans", "checkpoints",
                 "acp", "development"):  # fmt: skip
        assert f"docs/{page}.md" in targets, f"README.md does not link docs/{page}.md"


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for link in links(page):
        if re.match(r"[a-z]+:", link):  # https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(f"{link}: no {path.relative_to(ROOT) if ROOT in path.parents else path}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{link}: {path.name} has no heading #{anchor}")
    assert not broken, f"{page.name}:\n" + "\n".join(broken)


def test_readme_configuration_loads_as_shown(tmp_path: Path) -> None:
    """The README's ten lines of configuration are a valid user file, every key taken."""
    blocks = re.findall(r"```toml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1, "README.md shows one configuration file"
    user_file = tmp_path / "config.toml"
    user_file.write_text(blocks[0], encoding="utf-8")
    config, warnings = load_config(None, environ={"PLAN_LSP_CONFIG": str(user_file)})
    assert warnings == []
    assert config.provider == "openai" and config.model == "my-model"
    assert config.base_url == "http://localhost:8080/v1"
    assert config.permissions is not None and "bash(git push *)" in config.permissions.deny


TIMING = re.compile(r"\b\d+(?:[.,]\d+)?(?:[-\u2013]\d+)?\s?(?:s|sec|seconds|min|minutes)\b")


@pytest.mark.parametrize("path", ["README.md", "docs/development.md", "scripts/test.sh"])
def test_no_hand_copied_test_timings(path: str) -> None:
    """How long a tier takes is measured where it runs: a figure copied into these files
    disagreed with the others and with the machine (docs/benchmarks.md is generated)."""
    text = (ROOT / path).read_text(encoding="utf-8")
    assert TIMING.findall(text) == []


def pinned(script: str, name: str) -> str:
    found = re.search(rf'^{name}="?([0-9.]+)"?$', (ROOT / script).read_text(), re.M)
    assert found is not None, f"{script} pins no {name}"
    return found.group(1)


@pytest.mark.parametrize(
    ("what", "script", "variable"),
    [
        ("code-server", "client-vscode/scripts/install-e2e.sh", "CODE_SERVER_VERSION"),
        ("Neovim", "client-nvim/scripts/install-e2e.sh", "NVIM_WHEEL_VERSION"),
    ],
)
def test_tested_versions_named_are_the_installed_ones(
    what: str, script: str, variable: str
) -> None:
    version = pinned(script, variable)
    for page in ("docs/development.md", "docs/editors.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        named = set(re.findall(rf"{what} (\d+\.\d+\.\d+)", text))
        # Neovim 0.7.2 is Debian 12's package, installed as it comes.
        assert named <= {version, "0.7.2"}, f"{page} names {what} {named}, installed {version}"
