"""The checkpoint store of one session on one workspace folder.

Layout of the store folder (given by the caller; next to the session's state, never in the
workspace): `objects/` (file contents by sha256, zlib), `manifests/<id>` (what changed since
the previous checkpoint: a delta; the first, and the first after a prune, is whole),
`index.json` (the checkpoints in order, the redo stack, the ignored paths the run touched),
`journal.json` while a revert or redo is being applied. Every file of the store starts with
the sha256 of the rest, so a corrupt or truncated one is an error, never a half-restore.
"""

from __future__ import annotations

import builtins
import fcntl
import os
import secrets
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from plan_lsp.session.checkpoints import restore
from plan_lsp.session.checkpoints.ignore import DEFAULT_IGNORED, IgnoreRules
from plan_lsp.session.checkpoints.merge import line_counts
from plan_lsp.session.checkpoints.model import (
    AFTER,
    BEFORE,
    Checkpoint,
    FileChange,
    ForeignCheckpoint,
    PruneResult,
    RevertResult,
    UnknownCheckpoint,
)
from plan_lsp.session.checkpoints.restore import apply_delta
from plan_lsp.session.checkpoints.scanner import Children, Scan, children, follow, rescan, scan
from plan_lsp.session.checkpoints.snapshot import (
    FILE,
    FOLDER,
    LINK,
    RACY_NS,
    SKIPPED,
    BlobStore,
    CorruptStore,
    Entry,
    StoreUnavailable,
    dump,
    load,
    same,
    write_atomic,
)
from plan_lsp.session.checkpoints.watch import Changes, TreeWatch

DEFAULT_MAX_FILE_BYTES = 8 << 20
# Line counts are not worked out for bigger files (they count as binary: 0/0).
_COUNT_LINES_UP_TO = 4 << 20


class CheckpointStore:
    """Checkpoints of `workspace` kept in `directory`. Methods are safe to call from several
    threads; one process at a time writes a store (a lock file)."""

    def __init__(
        self,
        directory: Path,
        workspace: Path,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        ignored_defaults: tuple[str, ...] = DEFAULT_IGNORED,
    ) -> None:
        self.dir = Path(directory)
        self.root = Path(os.path.realpath(workspace))
        self.max_file_bytes = max_file_bytes
        self.ignored_defaults = ignored_defaults
        self.blobs = BlobStore(self.dir / "objects")
        self._lock = threading.RLock()
        self._latest: dict[str, Entry] | None = None
        self._watch = TreeWatch(str(self.root))
        self._exclude_stat: tuple[int, int, int] | None = None
        self._primed: Scan | None = None  # read before the first checkpoint (`prime`)
        self._kids: Children | None = None  # what each folder holds in the last scan
        self._rules: IgnoreRules | None = None  # the root's, at the last scan
        self._json: dict[str, tuple[Checkpoint, dict[str, Any]]] = {}  # index entries
        # Manifests read or written by this process: checkpoint id -> (whole?, changes).
        self._deltas: dict[str, tuple[bool, dict[str, Entry | None]]] = {}
        try:
            self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(f"the checkpoint store {self.dir}: {exc}") from None
        index = self.dir / "index.json"
        if index.exists():
            data = load(index)
            if data.get("workspace") != str(self.root):
                raise CorruptStore(f"the checkpoint store {self.dir} is of {data.get('workspace')}")
            self.token: str = data["store"]
            self._checkpoints = [Checkpoint.from_json(c) for c in data["checkpoints"]]
            self.redo_stack: list[dict[str, Any]] = data["redo"]
            self.tracked: set[str] = set(data["tracked"])
        else:
            self.token, self._checkpoints, self.redo_stack, self.tracked = (
                secrets.token_hex(4), [], [], set(),
            )  # fmt: skip
        self.recovered = restore.recover(self)

    # ---- reading ------------------------------------------------------------------------

    def list(self) -> list[Checkpoint]:
        return list(self._checkpoints)

    def get(self, checkpoint_id: str) -> Checkpoint:
        for cp in self._checkpoints:
            if cp.id == checkpoint_id:
                return cp
        if not checkpoint_id.startswith(self.token + "-"):
            raise ForeignCheckpoint(
                f"checkpoint {checkpoint_id!r} is not one of this session's checkpoints"
            )
        raise UnknownCheckpoint(f"no checkpoint {checkpoint_id!r} (never made, or pruned)")

    def position(self, checkpoint_id: str) -> int:
        return self._checkpoints.index(self.get(checkpoint_id))

    def deltas(self, upto: int) -> Iterator[tuple[bool, dict[str, Entry | None]]]:
        """Each checkpoint up to index `upto` (included): whether its manifest is whole (all
        that was before is replaced), and the entries it changed (None: gone)."""
        for cp in self._checkpoints[: upto + 1]:
            cached = self._deltas.get(cp.id)
            if cached is None:
                data = load(self.dir / "manifests" / cp.id)
                changes = self._entries(data["changes"])
                if data.get("base"):  # the whole workspace read ahead, then what changed
                    read_ahead = load(self.dir / "manifests" / data["base"])["changes"]
                    whole = {p: Entry.from_json(e) for p, e in read_ahead.items()}
                    apply_delta(whole, changes)
                    changes = dict[str, Entry | None](whole)
                cached = (bool(data.get("full")), changes)
                self._deltas[cp.id] = cached
            yield cached

    @staticmethod
    def _entries(data: dict[str, Any]) -> dict[str, Entry | None]:
        return {p: None if e is None else Entry.from_json(e) for p, e in data.items()}

    def manifest(self, checkpoint_id: str) -> dict[str, Entry]:
        """Every path recorded at that checkpoint."""
        full: dict[str, Entry] = {}
        for whole, changes in self.deltas(self.position(checkpoint_id)):
            if whole:
                full.clear()
            apply_delta(full, changes)
        return full

    def latest(self) -> dict[str, Entry]:
        if self._latest is None:
            self._latest = self.manifest(self._checkpoints[-1].id) if self._checkpoints else {}
        return self._latest

    def diff(self, from_id: str, to_id: str) -> builtins.list[FileChange]:
        return self.changes(self.manifest(from_id), self.manifest(to_id))

    def changes(
        self, old: dict[str, Entry], new: dict[str, Entry], paths: Iterable[str] | None = None
    ) -> builtins.list[FileChange]:
        """What differs between two manifests (among `paths` when given)."""
        out: builtins.list[FileChange] = []
        for path in sorted(old.keys() | new.keys() if paths is None else paths):
            a, b = old.get(path), new.get(path)
            if same(a, b) or a == b:
                continue
            kinds = {e.kind for e in (a, b) if e is not None}
            if kinds == {FOLDER}:
                continue  # folders appear with the files in them
            status = (
                "added" if a is None else "deleted" if b is None
                else "type" if a.kind != b.kind else "mode" if a.ref == b.ref else "modified"
            )  # fmt: skip
            out.append(FileChange(path, status, *self._count(a, b)))
        return out

    def _count(self, a: Entry | None, b: Entry | None) -> tuple[int, int]:
        def content(e: Entry | None) -> bytes | None:
            if e is None or e.kind != FILE:
                return None
            return self.blobs.get(e.ref) if e.size <= _COUNT_LINES_UP_TO else b"\0"

        return line_counts(content(a), content(b))

    def space(self) -> int:
        """Bytes the store takes on disk."""
        return sum(
            os.path.getsize(os.path.join(d, f)) for d, _s, fs in os.walk(self.dir) for f in fs
        )

    # ---- writing ------------------------------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        with self._lock:
            if not self.dir.is_dir():
                raise CorruptStore(f"the checkpoint store {self.dir} is missing")
            try:
                fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as exc:
                raise StoreUnavailable(f"the checkpoint store {self.dir}: {exc}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)

    def checkpoint(
        self,
        label: str,
        step: int | None = None,
        tool_call_id: str | None = None,
        *,
        kind: str = BEFORE,
        run: str = "",
        touched: Iterable[str | Path] = (),
    ) -> Checkpoint:
        """Record the workspace now. `touched`: paths the run is about to write or wrote
        (an ignored one is recorded from now on). `kind` AFTER: a tool call just ended.
        StoreUnavailable when the store cannot be written (the caller may go on without)."""
        with self.locked():
            self._track(touched)
            if kind in (BEFORE, AFTER):
                self.redo_stack = []
            return self.record(label, step, tool_call_id, kind=kind, run=run)

    def _track(self, touched: Iterable[str | Path]) -> None:
        rules = None
        for path in touched:
            rel = os.path.relpath(os.path.join(self.root, path), self.root).replace(os.sep, "/")
            if not rel.startswith("../") and rel not in (".", "..") and rel not in self.tracked:
                rules = rules or IgnoreRules.for_root(self.root, self.ignored_defaults)
                if rules.ignored_path(self.root, rel):
                    self.tracked.add(rel)

    def record(
        self, label: str, step: int | None, tool_call_id: str | None, *, kind: str, run: str,
        reverted_to: str | None = None, cp_id: str | None = None,
        written: dict[str, Entry | None] | None = None,
    ) -> Checkpoint:  # fmt: skip
        """Scan and store a checkpoint. `written`: only these paths changed since the last
        one, to these contents (a revert's own writes): they alone are looked at again."""
        try:
            return self._record(label, step, tool_call_id, kind, run, reverted_to, cp_id, written)
        except BaseException:
            self._watch.distrust()  # the changes taken for this scan were not recorded
            self._kids = None
            raise

    def _record(
        self, label: str, step: int | None, tool_call_id: str | None, kind: str, run: str,
        reverted_to: str | None, cp_id: str | None, written: dict[str, Entry | None] | None,
    ) -> Checkpoint:  # fmt: skip
        previous = self.latest()
        last_skipped = dict(self._checkpoints[-1].skipped) if self._checkpoints else {}
        base, primed = previous, None
        if written is None:
            if not self._checkpoints and self._primed is not None:
                primed = self._primed
                base = primed.entries
                last_skipped = primed.skipped | {
                    p: e.ref for p, e in base.items() if e.kind == SKIPPED
                }  # once per store: the read-ahead's
            now = self._scan(base, {p: w for p, w in last_skipped.items() if p not in base})
            self._primed = None
        else:
            ignored = {p: w for p, w in last_skipped.items() if p not in previous}
            now = Scan(dict(previous), ignored, set(written))
            for path, entry in written.items():
                stat_of(self.root, path, entry, now.entries)
        entries = now.entries
        if now.touched is None:  # a full scan: compare every path
            get = base.get
            delta: dict[str, Entry | None] = {p: e for p, e in entries.items() if get(p) is not e}
            delta.update({p: None for p in base.keys() - entries.keys()})
            skipped = now.skipped | {p: e.ref for p, e in entries.items() if e.kind == SKIPPED}
        else:  # only what the scan looked at
            delta = {p: entries.get(p) for p in now.touched if entries.get(p) is not base.get(p)}
            skipped = last_skipped
            for path in now.touched:
                skipped.pop(path, None)
                entry = entries.get(path)
                if entry is not None and entry.kind == SKIPPED:
                    skipped[path] = entry.ref
                elif path in now.skipped:
                    skipped[path] = now.skipped[path]
        seq = self._checkpoints[-1].seq + 1 if self._checkpoints else 1
        cp = Checkpoint(
            cp_id or f"{self.token}-{seq}", seq, time.time(), label, step, tool_call_id, kind,
            run, tuple(self.changes(previous, entries, delta) if previous else ()),
            tuple(sorted(skipped.items())), reverted_to,
        )  # fmt: skip
        body: dict[str, Any] = {"full": not self._checkpoints, "changes": {
            p: None if e is None else e.to_json() for p, e in delta.items()
        }}  # fmt: skip
        if primed is not None:
            body["base"] = self._read_ahead
        write_atomic(self.dir / "manifests" / cp.id, dump(body), make_parent=True)
        self._checkpoints.append(cp)
        try:
            self.save_index()
        except StoreUnavailable:
            self._checkpoints.pop()
            raise
        self._latest = entries
        self._deltas[cp.id] = (True, dict[str, Entry | None](entries)) if primed else (
            body["full"], delta
        )  # fmt: skip
        if self._kids is not None and now.touched is not None:
            follow(self._kids, now, now.touched)
        else:
            self._kids = None
        return cp

    @property
    def _read_ahead(self) -> str:
        """The manifest of the workspace as `prime` read it (the first checkpoint's base)."""
        return f"read-ahead-{self.token}"

    def _scan(self, base: dict[str, Entry], base_skipped: dict[str, str]) -> Scan:
        """The workspace now; only the folders changed since `base` when the watcher can
        say which (`base_skipped`: the ignored paths of that scan)."""
        changes = self._changes_since_last_scan()
        # Unchanged unless a full scan: a changed .gitignore or exclude file makes it one.
        if changes is None or self._rules is None:
            self._rules = IgnoreRules.for_root(self.root, self.ignored_defaults)
        ignore = self._rules
        if changes is None:
            self._kids = None
            now = scan(
                self.root, base, self.blobs, ignore=ignore, tracked=self.tracked,
                max_file_bytes=self.max_file_bytes, exclude=[self.dir], watch=self._watch,
            )  # fmt: skip
        else:
            if self._kids is None:
                self._kids = children(base, base_skipped)
            now = rescan(
                self.root, base, base_skipped, self._kids, changes, self.blobs, ignore=ignore,
                max_file_bytes=self.max_file_bytes, exclude=[self.dir], watch=self._watch,
            )  # fmt: skip
        self._watch.scanned(full_scan=changes is None)
        return now

    def prime(self) -> None:
        """Read the workspace ahead of the first checkpoint (its contents stored, its folders
        watched, its manifest written) while the user reads the plan, so that the first
        checkpoint of the Do run looks only at what changed since and stores only that.
        Records nothing; a no-op once a checkpoint exists."""
        with self.locked():
            if self._checkpoints:
                return
            primed = self._primed or Scan({}, {})
            try:
                now = self._scan(primed.entries, primed.skipped)
                if now.touched is not None:
                    follow(self._kids or {}, now, now.touched)
                self._primed = Scan(now.entries, now.skipped)
                body = {"changes": {p: e.to_json() for p, e in now.entries.items()}}
                write_atomic(
                    self.dir / "manifests" / self._read_ahead, dump(body), make_parent=True
                )
                if self._kids is None:
                    self._kids = children(now.entries, now.skipped)
            except BaseException:
                self._primed = self._kids = None
                self._watch.distrust()
                raise

    def _changes_since_last_scan(self) -> Changes | None:
        """The folders to look at again, or None for a full scan: the first of this process,
        one after files under ignored trees were tracked, or after `.git/info/exclude`
        changed, or whenever the watcher cannot vouch for the tree."""
        changes = self._watch.take()
        try:
            st = os.stat(self.root / ".git" / "info" / "exclude")
            exclude = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            exclude = None
        same_rules, self._exclude_stat = exclude == self._exclude_stat, exclude
        first = not self._checkpoints and self._primed is None
        if changes.full or self.tracked or first or not same_rules:
            return None
        return changes

    def save_index(self) -> None:
        restore.kill_point()
        data = {
            "store": self.token, "workspace": str(self.root), "redo": self.redo_stack,
            "tracked": sorted(self.tracked),
            "checkpoints": [self._json_of(c) for c in self._checkpoints],
        }  # fmt: skip
        write_atomic(self.dir / "index.json", dump(data))

    def _json_of(self, cp: Checkpoint) -> dict[str, Any]:
        if cp.id not in self._json or self._json[cp.id][0] is not cp:
            self._json[cp.id] = (cp, cp.to_json())
        return self._json[cp.id][1]

    def revert(
        self,
        checkpoint_id: str,
        changed_by_run: set[str] | None = None,
        keep_out: str | None = None,
    ) -> RevertResult:
        """Bring back the state of `checkpoint_id` for what the run changed since (by default
        worked out from the checkpoints; `changed_by_run`: the caller's own list), all but
        the path `keep_out`."""
        return restore.revert(self, checkpoint_id, changed_by_run, keep_out)

    def redo(self) -> RevertResult:
        """Undo the last revert: back to the state just before it, byte for byte."""
        return restore.redo(self)

    def prune(self, keep_runs: int | None = None, max_bytes: int | None = None) -> PruneResult:
        """Drop the checkpoints of all but the last `keep_runs` runs, then of the oldest runs
        while the store is over `max_bytes` (the last run is always kept), and every stored
        content no kept checkpoint needs."""
        with self.locked():
            before = self.space()
            runs = list(dict.fromkeys(cp.run for cp in self._checkpoints))
            keep = runs[-keep_runs:] if keep_runs else runs
            removed = self._drop_before(keep[0]) if keep else 0
            while max_bytes is not None and self.space() > max_bytes and len(keep) > 1:
                keep = keep[1:]
                removed += self._drop_before(keep[0])
            after = self.space()
            return PruneResult(removed, before - after, after)

    def _drop_before(self, run: str) -> int:
        first = next(i for i, cp in enumerate(self._checkpoints) if cp.run == run)
        if first == 0:
            return 0
        dropped = self._checkpoints[:first]
        full = self.manifest(self._checkpoints[first].id)
        body = {"full": True, "changes": {p: e.to_json() for p, e in full.items()}}
        write_atomic(self.dir / "manifests" / self._checkpoints[first].id, dump(body))
        gone = {cp.id for cp in dropped}
        self._deltas.clear()
        self._checkpoints = self._checkpoints[first:]
        self.redo_stack = [r for r in self.redo_stack if not gone & {r["pre"], r["post"]}]
        self.save_index()
        (self.dir / "manifests" / self._read_ahead).unlink(missing_ok=True)
        for cp in dropped:
            (self.dir / "manifests" / cp.id).unlink(missing_ok=True)
        self._collect_garbage()
        return len(dropped)

    def _collect_garbage(self) -> None:
        needed: set[str] = set()
        if self._primed is not None:
            needed.update(e.ref for e in self._primed.entries.values() if e.kind == FILE)
        for _whole, changes in self.deltas(len(self._checkpoints) - 1):
            needed.update(e.ref for e in changes.values() if e is not None and e.kind == FILE)
        journal = self.dir / "journal.json"
        if journal.exists():
            needed.update(op["post"][2] for op in load(journal)["ops"] if op["post"])
        for folder in self.blobs.dir.glob("??"):
            for blob in folder.iterdir():
                if folder.name + blob.name not in needed and not blob.name.startswith("."):
                    blob.unlink(missing_ok=True)


def stat_of(root: Path, path: str, entry: Entry | None, entries: dict[str, Entry]) -> None:
    """Put the state of `path`, just written with `entry` (None: removed), into `entries`
    as a scan would record it."""
    try:
        st = os.lstat(os.path.join(root, path))
    except OSError:
        st = None
    if entry is None or st is None:
        entries.pop(path, None)
    elif entry.kind == FILE:
        racy = time.time_ns() - RACY_NS <= st.st_mtime_ns
        ctime = -1 if racy else st.st_ctime_ns
        entries[path] = Entry(
            FILE, entry.mode, entry.ref, st.st_size, st.st_mtime_ns, ctime, st.st_ino
        )
    elif entry.kind == LINK:
        entries[path] = Entry(LINK, 0, entry.ref, st.st_size, st.st_mtime_ns)
    else:
        entries[path] = Entry(entry.kind, entry.mode, entry.ref)
