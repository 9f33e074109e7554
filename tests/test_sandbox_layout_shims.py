"""A version manager's shims on PATH (pyenv, rbenv, nodenv) run its own program from the
folder that holds them: the plan-mode sandbox shows that folder read-only wherever it lies
below a hidden place, never a hidden place itself."""

from __future__ import annotations

from pathlib import Path

from plan_lsp.policy.sandbox.layout import plan_layout


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "tools" / "pyenv" / "shims").mkdir(parents=True)
    (home / "tools" / "pyenv" / "libexec").mkdir()
    (home / ".ssh").mkdir()
    return home


def test_the_root_of_shims_on_path_is_shown_read_only(tmp_path: Path) -> None:
    home = _home(tmp_path)
    env = {"HOME": str(home), "PATH": f"{home}/tools/pyenv/shims:/usr/bin"}
    layout = plan_layout([tmp_path / "ws"], env)
    assert home.resolve() in layout.hidden_dirs
    assert (home / "tools" / "pyenv").resolve() in layout.toolchains


def test_shims_right_in_the_home_do_not_show_the_home(tmp_path: Path) -> None:
    home = _home(tmp_path)
    (home / "shims").mkdir()
    env = {"HOME": str(home), "PATH": f"{home}/shims:/usr/bin"}
    layout = plan_layout([tmp_path / "ws"], env)
    assert home.resolve() in layout.hidden_dirs
    assert (home / "shims").resolve() in layout.toolchains
    assert all(t != home.resolve() and not (home / ".ssh").is_relative_to(t)
               for t in layout.toolchains)  # fmt: skip
