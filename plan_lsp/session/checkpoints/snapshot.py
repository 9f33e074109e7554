"""What a checkpoint records of each path (`Entry`: every folder, file and link, keyed by
the path relative to the root, `/` form), the content-addressed blobs of file contents
(sha256 of the bytes; stored zlib-compressed), and the store's hashed files. The walk over
the workspace is `scanner.py`.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def read_file(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


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
