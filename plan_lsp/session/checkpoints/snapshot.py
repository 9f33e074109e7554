"""One pass over the workspace: every folder, file and link, as `Entry` values keyed by the
path relative to the root (`/` form), with the content of each regular file kept as a
content-addressed blob (sha256 of the bytes; stored zlib-compressed).

The scan is cheap on a later checkpoint: a file whose size, mtime, ctime and inode equal the
previous scan's is not read again (the previous manifest is the stat cache), unless it was
written so close to that scan that a later write could have kept its mtime ("racy", as git
calls it). Links are recorded as links (never followed), `.git` is never entered, ignored
trees are skipped unless the run touched a path inside them (`tracked`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plan_lsp.session.checkpoints.ignore import IgnoreRules
from plan_lsp.session.checkpoints.watch import Changes, TreeWatch

FILE, LINK, FOLDER, SKIPPED = "f", "l", "d", "x"
# A file modified within this long before a scan is hashed again at the next scan.
RACY_NS = 50_000_000


class CheckpointError(Exception):
    """A checkpoint operation failed; the message says what and why."""


class CorruptStore(CheckpointError):
    """The store's data does not match its own hashes (or is missing); nothing was changed."""


class StoreUnavailable(CheckpointError):
    """The store cannot be written (full disk, read-only, missing folder)."""


@dataclass(frozen=True, slots=True)
class Entry:
    kind: str  # FILE, LINK, FOLDER or SKIPPED
    mode: int  # permission bits (0 for links)
    ref: str  # FILE: sha256 of the content; LINK: its target; SKIPPED: why; FOLDER: ""
    size: int = 0
    mtime_ns: int = 0
    ctime_ns: int = 0
    ino: int = 0

    def same(self, other: Entry | None) -> bool:
        """Same content: kind, permission bits and bytes (or link target). A skipped file
        is never known to be the same."""
        if other is None or self.kind == SKIPPED or other.kind == SKIPPED:
            return False
        return (self.kind, self.mode, self.ref) == (other.kind, other.mode, other.ref)

    def to_json(self) -> list[object]:
        return [self.kind, self.mode, self.ref, self.size, self.mtime_ns, self.ctime_ns, self.ino]

    @classmethod
    def from_json(cls, data: list[object]) -> Entry:
        return cls(*data)  # type: ignore[arg-type]


def same(a: Entry | None, b: Entry | None) -> bool:
    return (a is None and b is None) or (a is not None and a.same(b))


def dump(data: object) -> bytes:
    body = json.dumps(data, separators=(",", ":")).encode()
    return hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def load(path: Path) -> Any:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise CorruptStore(f"the checkpoint store is missing {path.name} ({path})") from None
    except OSError as exc:
        raise CorruptStore(f"the checkpoint store cannot read {path}: {exc}") from None
    digest, _, body = raw.partition(b"\n")
    if hashlib.sha256(body).hexdigest().encode() != digest:
        raise CorruptStore(f"the checkpoint store's {path.name} is corrupt or truncated ({path})")
    return json.loads(body)


class BlobStore:
    """`<dir>/<2 hex>/<62 hex>`: zlib-compressed file contents named by their sha256."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory

    def path(self, digest: str) -> Path:
        return self.dir / digest[:2] / digest[2:]

    def put(self, data: bytes, digest: str | None = None) -> str:
        digest = digest or hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if not target.exists():
            write_atomic(target, zlib.compress(data, 1), make_parent=True)
        return digest

    def get(self, digest: str) -> bytes:
        try:
            data = zlib.decompress(self.path(digest).read_bytes())
        except (OSError, zlib.error) as exc:
            raise CorruptStore(f"the stored copy {digest[:12]} cannot be read: {exc}") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise CorruptStore(f"the stored copy {digest[:12]} does not match its hash")
        return data


def write_atomic(path: Path, data: bytes, *, make_parent: bool = False, mode: int = 0o600) -> None:
    """Write `path` through a temporary file in its folder and a rename; a StoreUnavailable
    (full disk, read-only) leaves the old file as it was."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if make_parent:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise StoreUnavailable(f"the checkpoint store cannot be written at {path}: {exc}") from None


@dataclass
class Scan:
    entries: dict[str, Entry]
    skipped: dict[str, str] = field(default_factory=dict)  # ignored trees and files not walked


def read_file(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


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
    changes: Changes | None = None,
    previous_skipped: dict[str, str] | None = None,
) -> Scan:
    """Walk `root` and record it; new contents go into `blobs`. An unchanged path keeps
    the very Entry object of `previous` (so a delta is found by identity). With `changes`
    (from `watch`; `previous_skipped`: the last scan's skipped paths) a folder known to the
    last scan and not changed since is taken from `previous` without being listed."""
    started = time.time_ns()
    out = Scan({}, {})
    entries, get = out.entries, previous.get
    tracked_set = set(tracked)
    # Folders on the way to a tracked path inside an ignored tree are walked.
    leading = {"/".join(p.split("/")[:i]) for p in tracked_set for i in range(1, p.count("/") + 1)}
    excluded = set()
    for path in exclude:
        try:
            st = os.stat(path)
            excluded.add((st.st_dev, st.st_ino))
        except OSError:
            pass
    racy_before = started - RACY_NS
    # Incremental: each folder's entries in the last scan (children listed by their parent).
    kids: dict[str, list[str]] | None = None
    if changes is not None and not changes.full and previous_skipped is not None:
        kids = {}
        for rel in (*previous, *previous_skipped):
            kids.setdefault(rel.rpartition("/")[0], []).append(rel)

    def unchanged(here: str) -> bool:
        """A folder the last scan listed and nothing changed in since."""
        if kids is None or changes is None or here in changes.dirty:
            return False
        parts = here.split("/")  # in a folder made or moved in since, nothing is known
        if any("/".join(parts[:i]) in changes.fresh for i in range(1, len(parts) + 1)):
            return False
        known = previous.get(here)
        return here == "" or (known is not None and known.kind == FOLDER)

    def reuse(folder: str, here: str, rules: IgnoreRules) -> None:
        assert kids is not None and previous_skipped is not None
        for rel in kids.get(here, ()):
            old = previous.get(rel)
            if old is None:
                out.skipped[rel] = previous_skipped[rel]
                continue
            entries[rel] = old
            if old.kind == FOLDER:
                path = os.path.join(folder, rel.rpartition("/")[2])
                below = rules
                if os.path.exists(os.path.join(path, ".gitignore")):
                    below = rules.add_folder(Path(path), rel + "/")
                walk(path, rel + "/", below, False, False)

    def record(full: str, rel: str, st: os.stat_result, old: Entry | None) -> None:
        mode = st.st_mode
        if stat.S_ISLNK(mode):
            new = Entry(LINK, 0, os.readlink(full), st.st_size, st.st_mtime_ns)
            entries[rel] = old if new == old and old is not None else new
            return
        if not stat.S_ISREG(mode):
            entries[rel] = Entry(SKIPPED, 0, "not a regular file, folder or link")
            return
        perm = stat.S_IMODE(mode)
        if st.st_size > max_file_bytes:
            why = f"over the size cap ({st.st_size:,} > {max_file_bytes:,} bytes)"
            entries[rel] = Entry(SKIPPED, perm, why, st.st_size, st.st_mtime_ns)
            return
        try:
            data = read_file(full)
        except FileNotFoundError:
            return
        except OSError as exc:
            why = f"unreadable ({exc.strerror or exc})"
            entries[rel] = Entry(SKIPPED, perm, why, st.st_size, st.st_mtime_ns)
            return
        ctime = st.st_ctime_ns if st.st_mtime_ns < racy_before else -1
        digest = blobs.put(data)
        entries[rel] = Entry(FILE, perm, digest, st.st_size, st.st_mtime_ns, ctime, st.st_ino)

    def walk(folder: str, prefix: str, rules: IgnoreRules, forced: bool, only: bool) -> None:
        """`forced`: record everything (a tracked tree); `only`: in an ignored folder on
        the way to a tracked path, record only tracked paths."""
        here = prefix[:-1]
        if unchanged(here):
            reuse(folder, here, rules)
            return
        if watch is not None:
            watch.enter(folder, here)
        try:
            listing = list(os.scandir(folder))
        except FileNotFoundError:
            return
        except OSError as exc:
            entries[prefix.rstrip("/")] = Entry(SKIPPED, 0, f"unreadable ({exc.strerror})")
            return
        for item in listing:
            name = item.name
            if name == ".git" or (name == ".plan-lsp" and not prefix):
                continue  # the user's repository; the plans, which plan-lsp itself keeps
            rel = prefix + name
            is_dir = item.is_dir(follow_symlinks=False)
            force = forced or rel in tracked_set
            if not force and (only or rules.ignored(rel, is_dir)):  # even if recorded before
                if rel in leading and is_dir:
                    walk(item.path, rel + "/", rules, False, True)
                else:
                    out.skipped[rel] = "ignored (.gitignore)"
                continue
            try:
                st = item.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            old = get(rel)
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
                entries[rel] = old
                continue
            if stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) in excluded:
                    continue
                perm = st.st_mode & 0o7777
                same_folder = old is not None and old.kind == FOLDER and old.mode == perm
                entries[rel] = old if same_folder and old is not None else Entry(FOLDER, perm, "")
                below = rules
                if os.path.exists(os.path.join(item.path, ".gitignore")):
                    below = rules.add_folder(Path(item.path), rel + "/")
                walk(item.path, rel + "/", below, force, False)
            else:
                record(item.path, rel, st, old)

    walk(str(root), "", ignore, False, False)
    return out


def through_link(root: Path | str, rel: str) -> bool:
    """Whether a folder on the way to `rel` is a link or not a folder: the path then names
    something outside what a checkpoint records, never read or written through."""
    parts = rel.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        try:
            st = os.lstat(os.path.join(root, *parts[:i]))
        except FileNotFoundError:
            return False
        if not stat.S_ISDIR(st.st_mode):
            return True
    return False


def entry_of(root: Path, rel: str, blobs: BlobStore | None, max_file_bytes: int) -> Entry | None:
    """The current state of one path (None if absent, or reached only through a link);
    file contents hashed (and stored in `blobs` when given)."""
    full = os.path.join(root, rel)
    if through_link(root, rel):
        return None
    try:
        st = os.lstat(full)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISDIR(st.st_mode):
        return Entry(FOLDER, stat.S_IMODE(st.st_mode), "")
    if stat.S_ISLNK(st.st_mode):
        return Entry(LINK, 0, os.readlink(full))
    if not stat.S_ISREG(st.st_mode) or st.st_size > max_file_bytes:
        return Entry(SKIPPED, 0, "not recorded")
    try:
        data = read_file(full)
    except OSError as exc:
        return Entry(SKIPPED, 0, f"unreadable ({exc.strerror})")
    digest = blobs.put(data) if blobs is not None else hashlib.sha256(data).hexdigest()
    return Entry(FILE, stat.S_IMODE(st.st_mode), digest, st.st_size)
