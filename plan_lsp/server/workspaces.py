"""One context per workspace folder: its config, state store and session."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plan_lsp.config import Config, load_config
from plan_lsp.session import Session, StateStore

log = logging.getLogger(__name__)


@dataclass
class WorkspaceContext:
    root: Path
    config: Config
    store: StateStore
    session: Session
    config_warnings: list[str] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def plans_dir(self) -> Path:
        return self.config.plans_path(self.root)


GITIGNORE = """\
# Written by plan-lsp: its database, WAL files, transcripts and plan revisions stay out of
# version control; plans (plans/) and a shared config.toml may be committed.
state.db
state.db-*
state.db.corrupt-*
revisions/
*.jsonl
.plan-lsp-tmp-*
"""


def write_gitignore(server_dir: Path) -> None:
    """Create `.plan-lsp/.gitignore` once; never follows a link, never overwrites."""
    try:
        if server_dir.is_symlink():
            return
        server_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(
            server_dir / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644
        )
    except OSError:
        return  # exists already (the user's or ours), or the folder is not writable
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(GITIGNORE)


class Workspaces:
    """Creates contexts lazily; the first folder is the default for requests naming none."""

    def __init__(
        self,
        warn: Callable[[str], None],
        cli_overrides: dict[str, Any] | None = None,
    ) -> None:
        self._warn = warn
        self._cli = cli_overrides or {}
        self.init_options: dict[str, Any] = {}
        self.roots: list[Path] = []
        self._contexts: dict[Path, WorkspaceContext] = {}
        self.on_created: list[Callable[[WorkspaceContext], None]] = []

    def set_roots(self, roots: list[Path]) -> None:
        seen: list[Path] = []
        for r in roots:
            resolved = r.resolve()
            if resolved not in seen:
                seen.append(resolved)
        self.roots = seen

    def get(self, root: Path | None = None) -> WorkspaceContext:
        if root is None:
            if not self.roots:
                raise LookupError("no workspace folder is open")
            root = self.roots[0]
        root = root.resolve()
        ctx = self._contexts.get(root)
        if ctx is None:
            ctx = self._create(root)
            self._contexts[root] = ctx
            for hook in self.on_created:
                hook(ctx)
        return ctx

    def all(self) -> list[WorkspaceContext]:
        return [self.get(r) for r in self.roots]

    def find_for_path(self, path: Path) -> WorkspaceContext | None:
        path = path.resolve()
        best: Path | None = None
        for root in self.roots:
            if path == root or root in path.parents:
                if best is None or len(root.parts) > len(best.parts):
                    best = root
        return self.get(best) if best is not None else None

    def _create(self, root: Path) -> WorkspaceContext:
        config, warnings = load_config(root, self.init_options, self._cli)
        for w in warnings:
            self._warn(w)
        write_gitignore(root / ".plan-lsp")
        store = StateStore(root / ".plan-lsp" / "state.db", warn=self._warn)
        session = Session(
            store,
            root,
            config.plans_path(root),
            default_permission_mode=config.permission_mode,
            default_mode=config.mode,
        )
        session.set_context(configWarnings=warnings)
        return WorkspaceContext(
            root=root, config=config, store=store, session=session, config_warnings=warnings
        )

    def close(self) -> None:
        for ctx in self._contexts.values():
            ctx.store.close()
