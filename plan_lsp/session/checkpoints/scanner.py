"""The walk over the workspace that a checkpoint records: every folder, file and link as an
`Entry` keyed by its path relative to the root, new file contents stored as blobs.

A full scan lists every folder; a file whose size, mtime, ctime and inode equal the previous
scan's is not read again (the previous manifest is the stat cache), unless it was written so
close to that scan that a later write could have kept its mtime ("racy", as git calls it).
Links are recorded as links (never followed), `.git` is never entered, ignored trees are
skipped unless the run touched a path inside them (`tracked`).

A later scan (`rescan`) costs what changed, not what the workspace holds: it starts from the
previous manifest and lists again only the folders the watcher says changed, walking whole
the folders made or moved in since; a `Children` index says what each folder held, so that
what is gone is dropped without a pass over every path.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from plan_lsp.session.checkpoints.ignore import IgnoreRules
from plan_lsp.session.checkpoints.snapshot import (
    FILE,
    FOLDER,
    LINK,
    RACY_NS,
    SKIPPED,
    BlobStore,
    Entry,
    read_file,
)
from plan_lsp.session.checkpoints.watch import Changes, TreeWatch

# What each folder ("" the root) held at the last scan: its recorded and skipped paths.
Children = dict[str, set[str]]


@dataclass
class Scan:
    entries: dict[str, Entry]
    skipped: dict[str, str] = field(default_factory=dict)  # ignored trees and files not walked
    # The paths a later scan looked at (set, changed or dropped); None: a full scan.
    touched: set[str] | None = None


def children(*trees: Iterable[str]) -> Children:
    kids: Children = {}
    for tree in trees:
        for rel in tree:
            kids.setdefault(rel.rpartition("/")[0], set()).add(rel)
    return kids


def follow(kids: Children, scan: Scan, paths: Iterable[str]) -> None:
    """Bring `kids` up to date with `scan` for the paths that changed."""
    for rel in paths:
        parent = rel.rpartition("/")[0]
        if rel in scan.entries or rel in scan.skipped:
            kids.setdefault(parent, set()).add(rel)
        elif parent in kids:
            kids[parent].discard(rel)


class _Walker:
    """One scan's state. With `kids` (a later scan) every path set or dropped is noted in
    `touched`, and a folder listed again drops what it no longer holds."""

    def __init__(
        self, root: Path, previous: dict[str, Entry], blobs: BlobStore, out: Scan, *,
        tracked: Iterable[str], max_file_bytes: int, exclude: Iterable[Path],
        watch: TreeWatch | None, kids: Children | None = None,
    ) -> None:  # fmt: skip
        self.root, self.get, self.blobs, self.out = root, previous.get, blobs, out
        self.entries, self.skipped = out.entries, out.skipped
        self.tracked = set(tracked)
        # Folders on the way to a tracked path inside an ignored tree are walked.
        self.leading = {
            "/".join(p.split("/")[:i]) for p in self.tracked for i in range(1, p.count("/") + 1)
        }
        self.excluded = set()
        for path in exclude:
            try:
                st = os.stat(path)
                self.excluded.add((st.st_dev, st.st_ino))
            except OSError:
                pass
        self.max_file_bytes, self.watch, self.kids = max_file_bytes, watch, kids
        self.racy_before = time.time_ns() - RACY_NS
        self.fresh: set[str] = set()

    def put(self, rel: str, entry: Entry) -> None:
        self.entries[rel] = entry
        if self.out.touched is not None:
            self.out.touched.add(rel)
            self.skipped.pop(rel, None)

    def skip(self, rel: str, why: str) -> None:
        self.skipped[rel] = why
        if self.out.touched is not None:
            self.out.touched.add(rel)
            self.entries.pop(rel, None)
            self.drop_below(rel)

    def forget(self, rel: str) -> None:
        """`rel` is gone since the last scan (a later scan only)."""
        if self.out.touched is not None:
            self.entries.pop(rel, None)
            self.skipped.pop(rel, None)
            self.out.touched.add(rel)
            self.drop_below(rel)

    def drop_below(self, folder: str) -> None:
        """Forget what `folder` held (it is gone, or no longer a folder)."""
        if self.kids is None or self.out.touched is None:
            return
        for rel in self.kids.pop(folder, ()):
            self.forget(rel)

    def record(self, full: str, rel: str, st: os.stat_result, old: Entry | None) -> None:
        mode = st.st_mode
        if stat.S_ISLNK(mode):
            new = Entry(LINK, 0, os.readlink(full), st.st_size, st.st_mtime_ns)
            self.put(rel, old if new == old and old is not None else new)
            return
        if not stat.S_ISREG(mode):
            self.put(rel, Entry(SKIPPED, 0, "not a regular file, folder or link"))
            return
        perm = stat.S_IMODE(mode)
        if st.st_size > self.max_file_bytes:
            why = f"over the size cap ({st.st_size:,} > {self.max_file_bytes:,} bytes)"
            self.put(rel, Entry(SKIPPED, perm, why, st.st_size, st.st_mtime_ns))
            return
        try:
            data = read_file(full)
        except FileNotFoundError:
            self.forget(rel)
            return
        except OSError as exc:
            why = f"unreadable ({exc.strerror or exc})"
            self.put(rel, Entry(SKIPPED, perm, why, st.st_size, st.st_mtime_ns))
            return
        ctime = st.st_ctime_ns if st.st_mtime_ns < self.racy_before else -1
        digest = self.blobs.put(data)
        self.put(rel, Entry(FILE, perm, digest, st.st_size, st.st_mtime_ns, ctime, st.st_ino))

    def walk(
        self, folder: str, prefix: str, rules: IgnoreRules, forced: bool, only: bool,
        relist: bool = False,
    ) -> None:  # fmt: skip
        """List `folder` and record what is in it. `forced`: record everything (a tracked
        tree); `only`: in an ignored folder on the way to a tracked path, record only tracked
        paths; `relist`: a folder listed again, whose known subfolders are not entered (their
        own changes are listed on their own)."""
        here = prefix[:-1]
        if self.watch is not None:
            self.watch.enter(folder, here)
        try:
            listing = list(os.scandir(folder))
        except FileNotFoundError:
            self.drop_below(here)
            return
        except OSError as exc:
            self.drop_below(here)
            self.put(here, Entry(SKIPPED, 0, f"unreadable ({exc.strerror})"))
            return
        held = set(self.kids.get(here, ())) if self.kids is not None else set()
        for item in listing:
            name = item.name
            if name == ".git" or (name == ".plan-lsp" and not prefix):
                continue  # the user's repository; the plans, which plan-lsp itself keeps
            rel = prefix + name
            held.discard(rel)
            self._item(item, rel, rules, forced, only, relist)
        for rel in held:  # gone since the last scan
            self.forget(rel)

    def _item(
        self, item: os.DirEntry[str], rel: str, rules: IgnoreRules, forced: bool, only: bool,
        relist: bool,
    ) -> None:  # fmt: skip
        is_dir = item.is_dir(follow_symlinks=False)
        force = forced or rel in self.tracked
        if not force and (only or rules.ignored(rel, is_dir)):  # even if recorded before
            if rel in self.leading and is_dir:
                self.walk(item.path, rel + "/", rules, False, True)
            else:
                self.skip(rel, "ignored (.gitignore)")
            return
        try:
            st = item.stat(follow_symlinks=False)
        except FileNotFoundError:
            self.forget(rel)
            return
        old = self.get(rel)
        if (  # the stat cache: same file as last time, not racy
            old is not None
            and old.mtime_ns == st.st_mtime_ns
            and old.ctime_ns == st.st_ctime_ns
            and old.ino == st.st_ino
            and old.size == st.st_size
            and old.kind == FILE
            and old.mode == st.st_mode & 0o7777
            and stat.S_ISREG(st.st_mode)
        ):
            if self.entries.get(rel) is not old:
                self.put(rel, old)
            return
        if not stat.S_ISDIR(st.st_mode):
            if old is not None and old.kind == FOLDER:
                self.drop_below(rel)
            self.record(item.path, rel, st, old)
            return
        if (st.st_dev, st.st_ino) in self.excluded:
            return
        perm = st.st_mode & 0o7777
        known = old is not None and old.kind == FOLDER
        new = old if known and old is not None and old.mode == perm else Entry(FOLDER, perm, "")
        if self.entries.get(rel) is not new:
            self.put(rel, new)
        if relist and known and rel not in self.fresh:
            return
        below = rules
        if os.path.exists(os.path.join(item.path, ".gitignore")):
            below = rules.add_folder(Path(item.path), rel + "/")
        self.walk(item.path, rel + "/", below, force, False)


def scan(
    root: Path,
    previous: dict[str, Entry],
    blobs: BlobStore,
    *,
    ignore: IgnoreRules,
    tracked: Iterable[str] = (),
    max_file_bytes: int,
    exclude: Iterable[Path] = (),
    watch: TreeWatch | None = None,
) -> Scan:
    """Walk `root` whole and record it; new contents go into `blobs`. An unchanged path keeps
    the very Entry object of `previous` (so a delta is found by identity)."""
    out = Scan({}, {})
    walker = _Walker(
        root, previous, blobs, out, tracked=tracked, max_file_bytes=max_file_bytes,
        exclude=exclude, watch=watch,
    )  # fmt: skip
    walker.walk(str(root), "", ignore, False, False)
    return out


def rescan(
    root: Path,
    previous: dict[str, Entry],
    previous_skipped: dict[str, str],
    kids: Children,
    changes: Changes,
    blobs: BlobStore,
    *,
    ignore: IgnoreRules,
    max_file_bytes: int,
    exclude: Iterable[Path] = (),
    watch: TreeWatch | None = None,
) -> Scan:
    """The workspace now, from `previous` (and the ignored paths `previous_skipped`) and the
    folders `changes` names: each changed folder is listed again (what it no longer holds is
    dropped), a folder made or moved in since is walked whole. `kids` (what each folder held
    in `previous`) is updated in place as folders are dropped; `touched` says what to look
    at for the delta. No tracked ignored paths: those take a full scan."""
    out = Scan(dict(previous), dict(previous_skipped), set())
    walker = _Walker(
        root, previous, blobs, out, tracked=(), max_file_bytes=max_file_bytes,
        exclude=exclude, watch=watch, kids=kids,
    )  # fmt: skip
    walker.fresh = changes.fresh
    dirty = changes.dirty | {f.rpartition("/")[0] for f in changes.fresh}
    for here in sorted(dirty, key=lambda rel: (rel.count("/") + bool(rel), rel)):
        if here and (out.entries.get(here) is None or out.entries[here].kind != FOLDER):
            continue  # gone, or no longer a folder: its parent was listed again
        rules = ignore
        parts = here.split("/") if here else []
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            if os.path.exists(os.path.join(root, sub, ".gitignore")):
                rules = rules.add_folder(root / sub, sub + "/")
        folder = os.path.join(root, here) if here else str(root)
        walker.walk(folder, here + "/" if here else "", rules, False, False, relist=True)
    return out
