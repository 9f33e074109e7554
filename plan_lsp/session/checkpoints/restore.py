"""Revert and redo: work out what to restore, write that plan (the journal), apply it with
atomic renames, record the result, drop the journal. A process killed in the middle leaves
the journal; the next open of the store finishes the revert (`recover`): each step is done
again only where the path still holds its state from before the revert (or is absent, half
way through a type change), so nothing is left half-restored and nothing the user changed
meanwhile is overwritten.

What a revert restores: only the paths this store's run changed between the target and now
(the changes after an AFTER/REVERT/REDO checkpoint up to the next one are someone else's), and
of those only the ones nobody changed after the run's last change to them; those are merged
by lines when both changes do not touch, otherwise kept as they are and listed.
"""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from plan_lsp.session.checkpoints.merge import merge3
from plan_lsp.session.checkpoints.model import (
    CLOSING,
    PRE_REVERT,
    REDO,
    REVERT,
    Checkpoint,
    Kept,
    RevertResult,
)
from plan_lsp.session.checkpoints.snapshot import (
    FILE,
    FOLDER,
    LINK,
    SKIPPED,
    BlobStore,
    CheckpointError,
    Entry,
    dump,
    entry_of,
    load,
    same,
    through_link,
    write_atomic,
)


class Store(Protocol):
    """What a revert needs of the store (store.py's Store)."""

    root: Path
    dir: Path
    token: str
    max_file_bytes: int
    blobs: BlobStore
    redo_stack: list[dict[str, Any]]

    def locked(self) -> AbstractContextManager[None]: ...
    def list(self) -> list[Checkpoint]: ...
    def get(self, checkpoint_id: str) -> Checkpoint: ...
    def position(self, checkpoint_id: str) -> int: ...
    def deltas(self, upto: int) -> Iterator[tuple[bool, dict[str, Entry | None]]]: ...
    def manifest(self, checkpoint_id: str) -> dict[str, Entry]: ...
    def latest(self) -> dict[str, Entry]: ...
    def record(
        self, label: str, step: int | None, tool_call_id: str | None, *, kind: str, run: str,
        reverted_to: str | None = None, cp_id: str | None = None,
        written: dict[str, Entry | None] | None = None,
    ) -> Checkpoint: ...  # fmt: skip


def apply_delta(full: dict[str, Entry], changes: dict[str, Entry | None]) -> None:
    for path, entry in changes.items():
        if entry is None:
            full.pop(path, None)
        else:
            full[path] = entry


# Fault injection for the crash tests: SIGKILL this process at the Nth write of a revert.
KILL_AT_VARIABLE = "PLAN_LSP_CHECKPOINT_KILL_AT"
_writes = [0]


def kill_point() -> None:
    at = os.environ.get(KILL_AT_VARIABLE)
    if at:
        _writes[0] += 1
        if _writes[0] == int(at):
            os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class Op:
    path: str
    pre: Entry | None  # its state when the plan was made
    post: Entry | None  # the state to restore (None: absent)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "pre": self.pre.to_json() if self.pre else None,
            "post": self.post.to_json() if self.post else None,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Op:
        pre, post = d["pre"], d["post"]
        return cls(d["path"], pre and Entry.from_json(pre), post and Entry.from_json(post))


def revert(
    store: Store,
    checkpoint_id: str,
    changed_by_run: set[str] | None = None,
    keep_out: str | None = None,
) -> RevertResult:
    with store.locked():
        target_at = store.position(checkpoint_id)
        target_cp = store.list()[target_at]
        label, run = f"before revert to {checkpoint_id}", target_cp.run
        if store.list()[-1].kind in CLOSING:
            # Since the last checkpoint only others changed the tree: the run's paths are
            # all that need looking at now.
            full, target, last = _replay(store, target_at)
            now = _now(store, last if changed_by_run is None else changed_by_run)
            pre = store.record(label, None, None, kind=PRE_REVERT, run=run, written=now)
            apply_delta(full, now)
        else:  # the run's last tool call may have changed anything since: a whole scan
            pre = store.record(label, None, None, kind=PRE_REVERT, run=run)
            full, target, last = _replay(store, target_at)
        if changed_by_run is not None:
            last = {p: last.get(p, full.get(p)) for p in changed_by_run}
        last.pop(keep_out or "", None)  # the plan, whose marks the caller restores
        result = RevertResult(checkpoint_id)
        ops = plan(store, last, target, full, _unrecorded(target_cp.skipped), result)
        paths = [op.path for op in ops]
        record = {"pre": pre.id, "post": "", "paths": paths, "target": checkpoint_id}
        return _run(store, "revert", checkpoint_id, ops, result, record)


def _replay(
    store: Store, target_at: int
) -> tuple[dict[str, Entry], dict[str, Entry], dict[str, Entry | None]]:
    """The latest manifest, the target's, and each path the run changed after the target
    with its state after the run's last change to it."""
    cps = store.list()
    full: dict[str, Entry] = {}
    target: dict[str, Entry] = {}
    last: dict[str, Entry | None] = {}
    for i, (whole, changes) in enumerate(store.deltas(len(cps) - 1)):
        if whole:
            changes = {**{p: None for p in full.keys() - changes.keys()}, **changes}
        if i > target_at and cps[i - 1].kind not in CLOSING:
            get = full.get
            for path, entry in changes.items():
                old = get(path)
                if old != entry and not same(old, entry):
                    last[path] = entry
        apply_delta(full, changes)
        if i == target_at:
            target = dict(full)
    return full, target, last


def _now(store: Store, paths: Iterable[str]) -> dict[str, Entry | None]:
    """The current state of `paths`, their contents stored."""
    return {p: entry_of(store.root, p, store.blobs, store.max_file_bytes) for p in paths}


def redo(store: Store) -> RevertResult:
    """Go forward to the state before the last revert (or redo's revert) still on the stack."""
    with store.locked():
        if not store.redo_stack:
            raise CheckpointError("nothing to redo: no revert since the last checkpoint")
        record = store.redo_stack[-1]
        target_cp = store.get(record["pre"])
        target, after = store.manifest(record["pre"]), store.manifest(record["post"])
        label, run = "before redo", target_cp.run
        if store.list()[-1].kind in CLOSING:
            now = _now(store, record["paths"])
            store.record(label, None, None, kind=PRE_REVERT, run=run, written=now)
        else:
            store.record(label, None, None, kind=PRE_REVERT, run=run)
        result = RevertResult(record["pre"])
        last = {p: after.get(p) for p in record["paths"]}
        ops = plan(store, last, target, store.latest(), _unrecorded(target_cp.skipped), result)
        return _run(store, "redo", record["pre"], ops, result, None)


def _unrecorded(skipped: tuple[tuple[str, str], ...]) -> Callable[[str], str | None]:
    why = dict(skipped)

    def check(path: str) -> str | None:
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            reason = why.get("/".join(parts[:depth]))
            if reason is not None:
                return f"not recorded at that checkpoint: {reason}"
        return None

    return check


def plan(
    store: Store,
    last: dict[str, Entry | None],
    target: dict[str, Entry],
    current: dict[str, Entry],
    unrecorded: Callable[[str], str | None],
    result: RevertResult,
) -> list[Op]:
    ops: list[Op] = []
    for path in sorted(last):
        t, b, c = target.get(path), last[path], current.get(path)
        why = unrecorded(path) if t is None else (t.ref if t.kind == SKIPPED else None)
        if why is not None:
            result.not_restorable.append(Kept(path, why))
        elif same(c, t):
            continue
        elif c is not None and c.kind == SKIPPED:
            result.kept.append(Kept(path, f"not restored: it is now {c.ref}"))
        elif same(c, b):
            ops.append(Op(path, c, t))
        elif t and b and c and t.kind == b.kind == c.kind == FILE:
            blobs = store.blobs
            merged = merge3(blobs.get(b.ref), blobs.get(c.ref), blobs.get(t.ref))
            if merged is None:
                why = "you changed it after the run did and the changes overlap (or it is not text)"
                result.kept.append(Kept(path, why))
                continue
            mode = c.mode if c.mode != b.mode else t.mode
            ops.append(Op(path, c, Entry(FILE, mode, blobs.put(merged), len(merged))))
            result.merged.append(path)
        else:
            result.kept.append(Kept(path, "you changed it after the run did"))
    return _structural(ops, current, result)


def _structural(ops: list[Op], current: dict[str, Entry], result: RevertResult) -> list[Op]:
    """Drop the steps that cannot be done without touching what is not being restored: a
    folder to remove that keeps other files, a path whose folder would be a file."""
    after: dict[str, Entry | None] = {**current, **{op.path: op.post for op in ops}}
    keep: list[Op] = []
    for op in ops:
        prefix = op.path + "/"
        removes_folder = op.pre is not None and op.pre.kind == FOLDER
        if removes_folder and (op.post is None or op.post.kind != FOLDER):
            if any(p.startswith(prefix) and e is not None for p, e in after.items()):
                result.kept.append(Kept(op.path, "a folder now holding files the run did not make"))
                continue
        if op.post is not None:
            parts = op.path.split("/")
            parents = ("/".join(parts[:i]) for i in range(1, len(parts)))
            if any((e := after.get(p)) is not None and e.kind != FOLDER for p in parents):
                result.kept.append(Kept(op.path, "its folder is now a file or a link"))
                continue
        keep.append(op)
    return keep


def _run(
    store: Store, kind: str, target: str, ops: list[Op], result: RevertResult,
    record: dict[str, Any] | None,
) -> RevertResult:  # fmt: skip
    for op in ops:  # a missing or corrupt copy is an error before anything is written
        if op.post is not None and op.post.kind == FILE:
            store.blobs.get(op.post.ref)
    seq = store.list()[-1].seq + 1
    journal = {
        "kind": kind, "target": target, "result_id": f"{store.token}-{seq}", "record": record,
        "ops": [op.to_json() for op in ops],
        "merged": result.merged,
        "kept": [[k.path, k.why] for k in result.kept],
        "not_restorable": [[k.path, k.why] for k in result.not_restorable],
    }  # fmt: skip
    kill_point()
    write_atomic(store.dir / "journal.json", dump(journal))
    return _finish(store, journal)


def _finish(store: Store, journal: dict[str, Any]) -> RevertResult:
    result = RevertResult(
        journal["target"], merged=list(journal["merged"]),
        kept=[Kept(p, w) for p, w in journal["kept"]],
        not_restorable=[Kept(p, w) for p, w in journal["not_restorable"]],
    )  # fmt: skip
    ops = [Op.from_json(o) for o in journal["ops"]]
    for op in sorted(ops, key=lambda o: o.path.count("/"), reverse=True):
        if _needs_removal(op):
            _step(store, op, result, _remove)
    done = {k.path for k in result.kept}
    for op in sorted(ops, key=lambda o: o.path.count("/")):
        if op.post is not None and op.path not in done:
            _step(store, op, result, _write)
    kept = {k.path for k in result.kept}
    result.restored = [op.path for op in ops if op.path not in kept]
    result.merged = [p for p in result.merged if p in result.restored]
    record = journal["record"]
    if record is not None:
        record["post"] = journal["result_id"]
        store.redo_stack.append(record)
    elif store.redo_stack:
        store.redo_stack.pop()
    kind = REVERT if journal["kind"] == "revert" else REDO
    result.checkpoint = store.record(
        f"{journal['kind']} to {journal['target']}", None, None, kind=kind,
        run=store.list()[-1].run, reverted_to=journal["target"], cp_id=journal["result_id"],
        written={op.path: op.post for op in ops if op.path not in kept},
    )  # fmt: skip
    kill_point()
    (store.dir / "journal.json").unlink(missing_ok=True)
    return result


def _needs_removal(op: Op) -> bool:
    if op.pre is None:
        return False
    return op.post is None or (
        FOLDER in (op.pre.kind, op.post.kind) and op.pre.kind != op.post.kind
    )


Action = Callable[[Store, Op], None]


def _step(store: Store, op: Op, result: RevertResult, action: Action) -> None:
    if ".git" in op.path.split("/"):
        return
    now = entry_of(store.root, op.path, None, store.max_file_bytes)
    if same(now, op.post) or (now is None and (op.post is None or action is _remove)):
        return  # already done (a finished step of an interrupted revert)
    if not (now is None or same(now, op.pre)):
        result.kept.append(Kept(op.path, "changed while the revert was being applied"))
        return
    try:
        action(store, op)
    except OSError as exc:
        result.kept.append(Kept(op.path, f"could not be restored: {exc.strerror or exc}"))


def _inside(store: Store, op: Op) -> str:
    """The path to change, refused when a folder on the way is now a link or a file (what
    it points at is outside what the run changed)."""
    if through_link(store.root, op.path):
        raise OSError(errno.ENOTDIR, "a folder on its way is now a link or a file")
    return os.path.join(store.root, op.path)


def _remove(store: Store, op: Op) -> None:
    full = _inside(store, op)
    kill_point()
    if op.pre is not None and op.pre.kind == FOLDER:
        os.rmdir(full)
    else:
        os.unlink(full)


def _write(store: Store, op: Op) -> None:
    assert op.post is not None
    full = _inside(store, op)
    parent, name = os.path.split(full)
    if not os.path.isdir(parent):
        kill_point()
        os.makedirs(parent, exist_ok=True)
    if op.post.kind == FOLDER:
        if not os.path.isdir(full) or os.path.islink(full):
            kill_point()
            os.mkdir(full, op.post.mode)
        kill_point()
        os.chmod(full, op.post.mode)
        return
    tmp = os.path.join(parent, f".{name}.plan-lsp-revert")
    if os.path.lexists(tmp):
        os.unlink(tmp)
    kill_point()
    if op.post.kind == LINK:
        os.symlink(op.post.ref, tmp)
    else:
        data = store.blobs.get(op.post.ref)
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
            handle.write(data)
        kill_point()
        os.chmod(tmp, op.post.mode)
    kill_point()
    os.replace(tmp, full)


def recover(store: Store) -> RevertResult | None:
    """Finish a revert or redo a killed process left half done (called when a store opens)."""
    path = store.dir / "journal.json"
    if not path.exists():
        return None
    journal = load(path)
    if any(cp.id == journal["result_id"] for cp in store.list()):
        path.unlink(missing_ok=True)
        return None
    with store.locked():
        return _finish(store, journal)
