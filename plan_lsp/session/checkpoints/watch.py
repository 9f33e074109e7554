"""Which folders changed since the last scan, from the kernel (Linux inotify), so that a later
checkpoint lists and stats only those folders instead of every file of the workspace — what
git's fsmonitor does for `git status`.

A folder is watched from the moment the scan enters it (before it is listed), so a change
made while it is being listed is seen at the next scan. Whatever the watcher cannot vouch for
makes the next scan a full one: the event queue overflowed, a watch could not be added (the
user's `max_user_watches`), a folder was moved away, or no kernel support. What a watcher
cannot see at all (a write through a hard link from outside the workspace, a write to a
shared memory map) is the limit of this method, as it is of git's.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import weakref

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED, IN_ISDIR = (
    0x400, 0x800, 0x4000, 0x8000, 0x40000000
)  # fmt: skip
IN_ONLYDIR, IN_DONT_FOLLOW, IN_EXCL_UNLINK = 0x1000000, 0x2000000, 0x4000000
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
MASK = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
    | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK
)  # fmt: skip
_HEADER = struct.Struct("iIII")


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


class Changes:
    """What a scan must look at again. `full`: everything (the watcher cannot vouch for the
    tree); else `dirty` folders (their listing or a file in them changed) and `fresh` ones
    (made or moved in since: walked whole)."""

    def __init__(self, full: bool, dirty: set[str], fresh: set[str]) -> None:
        self.full, self.dirty, self.fresh = full, dirty, fresh


class TreeWatch:
    """The folders of one tree under watch; `enter` as a scan reaches each, `take` before the
    next scan. Without inotify every `take` says "full"."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._paths: dict[int, str] = {}  # watch descriptor -> folder (relative, "" = root)
        self._broken = True  # until a full scan has entered every folder
        self.fd = -1
        if _LIBC is not None:
            fd = _LIBC.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
            if fd >= 0:
                self.fd = fd
                weakref.finalize(self, os.close, fd)

    @property
    def active(self) -> bool:
        return self.fd >= 0

    def enter(self, full: str, rel: str) -> None:
        """A scan is about to list folder `full` (`rel` its relative path)."""
        if self.fd < 0 or _LIBC is None:
            return
        wd = _LIBC.inotify_add_watch(self.fd, os.fsencode(full), MASK)
        if wd < 0:
            if ctypes.get_errno() not in (errno.ENOENT, errno.ENOTDIR):
                self._broken = True  # out of watches, or refused: full scans from now on
            return
        self._paths[wd] = rel

    def distrust(self) -> None:
        """What was taken was not recorded (the checkpoint failed): the next scan is full."""
        self._broken = True

    def scanned(self, full_scan: bool) -> None:
        """A scan ended; after a full one every folder it walked is watched."""
        if full_scan and self.fd >= 0:
            self._broken = False

    def take(self) -> Changes:
        """The folders changed since the last `take` (reading the queue empties it)."""
        dirty: set[str] = set()
        fresh: set[str] = set()
        full = self._broken or self.fd < 0
        while self.fd >= 0:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                full = True
                break
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
                raw = data[offset + _HEADER.size : offset + _HEADER.size + length]
                offset += _HEADER.size + length
                name = os.fsdecode(raw.rstrip(b"\0"))
                if mask & IN_Q_OVERFLOW or mask & IN_MOVE_SELF:
                    full = True  # lost events; a moved folder keeps its old name here
                    continue
                folder = self._paths.get(wd)
                if mask & IN_IGNORED:
                    self._paths.pop(wd, None)
                if folder is None:
                    continue
                dirty.add(folder)
                if name == ".gitignore":
                    full = True  # the rules of a whole subtree may have changed
                if name and mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):
                    fresh.add(f"{folder}/{name}" if folder else name)
        if full:
            self._broken = True
        return Changes(full, dirty, fresh)
