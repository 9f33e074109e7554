"""The one way the server writes a file: atomically, from a trusted anchor, never through a link.

Every file the server writes — plans, revisions, the approved plan, checklist mirroring, and
the files `write_file`/`edit_file` change in build mode — goes through `write_text`:

- **Directories are walked, not resolved.** The target's folder is reached from a trusted
  anchor (a workspace root, opened as given) one component at a time, each opened with
  `O_DIRECTORY | O_NOFOLLOW` relative to the previous directory's file descriptor. A symbolic
  link anywhere below the anchor is refused at the moment of opening, even one that appeared
  after the path was checked. Missing folders are created with `mkdir(dir_fd=...)`, which
  never follows a link either.
- **Atomic replace.** The text goes into a new file created `O_CREAT | O_EXCL | O_NOFOLLOW`
  inside that directory (a random hidden name; a name that exists already — the repository
  may ship files named like ours — is never reused or removed), is fsynced, and renamed over
  the target with `os.replace(..., src_dir_fd=, dst_dir_fd=)`. The directory is fsynced so
  the rename survives a crash. Readers see the old file or the new one, never a torn one.
- **The target must be a regular file or absent.** A symbolic link, FIFO, socket, device or
  directory under the target's name is refused with a message saying so. Renaming over a link
  would replace the link without touching its target, but a link where the server writes
  means somebody meant writes to land elsewhere; refusing says so instead of silently
  rewriting what the repository ships.
- **Hard links.** Replacing by rename gives the name a new inode: other names of the old file
  keep their content.
- **Modes.** A new file is created with mode 0o666 (or the `mode` asked for) and the kernel
  applies the process umask inside `open(2)`: 0644 under the usual 022, 0600 under 077. The
  umask is never read: `os.umask` can only be read by setting it, which is process-wide and
  racy in a threaded server, and `/proc/self/status` exists on Linux only; letting the kernel
  apply it is atomic and portable (a default ACL on the folder applies as it does for any
  program). An existing file keeps its permission bits: the temporary file is created with
  them (never more open than the file it replaces) and they are set exactly with `fchmod` on
  its descriptor — nothing is ever chmod-ed by path. Set-user-ID, set-group-ID and sticky
  bits are dropped, as the kernel drops them when an unprivileged process writes a file.

Every file the server reads from a workspace (configuration, plans, the files the read-only
tools show) is read the same way (`open_regular`, `read_bytes`, `read_text`): the same walk,
the file opened `O_NOFOLLOW | O_NONBLOCK`, then `fstat`-ed on its descriptor. Only a regular
file is read, and only up to a size bound: a link is never read through, a FIFO or device
never blocks the server (nor streams forever), a huge file never fills its memory.
`read_file_bytes` is the same check for a path already validated by its caller (no anchor):
the file itself is opened without following a link.

POSIX only: directory file descriptors are required.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

# Hidden, so watchers and plan names (which refuse hidden parts) never take them for plans.
TEMP_PREFIX = ".plan-lsp-tmp-"
_TEMP_ATTEMPTS = 16

# Looked up softly so the module imports everywhere; `_folder` refuses to work without them.
# (os.replace takes dir_fd wherever os.rename does: both are renameat.)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC
_SUPPORTED = bool(_NOFOLLOW and _DIRECTORY) and {os.open, os.mkdir, os.rename, os.stat} <= (
    os.supports_dir_fd
)
# Permission bits an existing file keeps when it is rewritten.
_KEPT_BITS = 0o777
# What the server reads whole from a workspace at most, unless its caller says otherwise.
MAX_READ_BYTES = 64 * 1024 * 1024


class WriteRefused(OSError):
    """A read or write the server will not do; the message says which path and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class FileTooLarge(WriteRefused):
    """A file larger than the reader's bound; it was not read."""


@dataclass(frozen=True)
class Written:
    path: Path
    # True when no file existed under the name before.
    created: bool
    # The permission bits the file has now.
    mode: int


def relative_parts(anchor: Path, path: Path) -> tuple[str, ...]:
    """The components of `path` below `anchor`, compared as written (nothing is resolved)."""
    try:
        parts = path.relative_to(anchor).parts
    except ValueError:
        raise WriteRefused(f"{path} is not inside {anchor}") from None
    if not parts:
        raise WriteRefused(f"{path} is the folder {anchor} itself, not a file in it")
    if any(part in ("", ".", "..") or "\x00" in part for part in parts):
        raise WriteRefused(f"{path}: '.', '..' and empty parts are not allowed")
    return parts


def _shown(parts: tuple[str, ...] | list[str]) -> str:
    return "/".join(parts)


def file_kind(st_mode: int) -> str:
    """What a mode says is there, in words ("a FIFO", "a symbolic link")."""
    if stat.S_ISLNK(st_mode):
        return "a symbolic link"
    if stat.S_ISDIR(st_mode):
        return "a folder"
    if stat.S_ISFIFO(st_mode):
        return "a FIFO"
    if stat.S_ISSOCK(st_mode):
        return "a socket"
    if stat.S_ISCHR(st_mode) or stat.S_ISBLK(st_mode):
        return "a device"
    if stat.S_ISREG(st_mode):
        return "a regular file"
    return "something unknown"


def _wrong_kind(st_mode: int, shown: str, folder: bool, verb: str = "writes") -> str | None:
    """Why what is there (its own status, a link not followed) is not the folder or regular
    file wanted, or None."""
    if stat.S_ISLNK(st_mode):
        return f"{shown} is a symbolic link; the server never follows links where it {verb}"
    if folder and not stat.S_ISDIR(st_mode):
        return f"{shown} is {file_kind(st_mode)}, not a folder"
    if not folder and not stat.S_ISREG(st_mode):
        return f"{shown} is {file_kind(st_mode)}, not a regular file"
    return None


def _refuse_existing(
    parent_fd: int, name: str, shown: str, exc: OSError, folder: bool, verb: str = "writes"
) -> OSError:
    """Turn a failed open of an existing name into a message that says what is there."""
    try:
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except OSError:
        return exc
    wrong = _wrong_kind(st.st_mode, shown, folder, verb)
    # The right kind of thing, refused for another reason (permissions...): say that.
    return exc if wrong is None else WriteRefused(wrong)


def _open_dir(parent_fd: int, name: str, shown: str, create: bool) -> tuple[int, bool]:
    """Open the folder `name` under `parent_fd` without following a link; (fd, created)."""
    created = False
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd), False
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:
        raise _refuse_existing(parent_fd, name, shown, exc, folder=True) from None
    try:
        os.mkdir(name, 0o777, dir_fd=parent_fd)
        created = True
    except FileExistsError:
        pass  # made meanwhile (or a dangling link): the open below decides
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd), created
    except OSError as exc:
        raise _refuse_existing(parent_fd, name, shown, exc, folder=True) from None


@contextlib.contextmanager
def _folder(anchor: Path, parts: tuple[str, ...], create: bool) -> Iterator[int]:
    """A descriptor for the folder `anchor/parts...`, walked without following links.

    The anchor itself is opened as given (it is trusted: a workspace root). With `create`,
    missing folders are made and every parent of a new one is fsynced.
    """
    if not _SUPPORTED:
        raise WriteRefused(
            "this system lacks directory file descriptors with O_NOFOLLOW, without which "
            "files cannot be written safely"
        )
    fd = os.open(anchor, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for index, name in enumerate(parts):
            child, created = _open_dir(fd, name, _shown(parts[: index + 1]), create)
            if created:
                _fsync_quietly(fd)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _fsync_quietly(fd: int) -> None:
    # Some filesystems refuse fsync on directories (EINVAL); the data itself was fsynced.
    with contextlib.suppress(OSError):
        os.fsync(fd)


def _existing(dir_fd: int, name: str, shown: str) -> os.stat_result | None:
    """The target's own status (a link is not followed); refuses anything but a regular file."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    wrong = _wrong_kind(st.st_mode, shown, folder=False)
    if wrong is not None:
        raise WriteRefused(wrong)
    return st


def _create_temp(dir_fd: int, mode: int) -> tuple[int, str]:
    for _ in range(_TEMP_ATTEMPTS):
        name = f"{TEMP_PREFIX}{secrets.token_hex(8)}.tmp"
        try:
            return os.open(name, _TEMP_FLAGS, mode, dir_fd=dir_fd), name
        except FileExistsError:
            continue
    raise WriteRefused("could not create a temporary file (every name tried exists)")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_bytes(
    anchor: Path, path: Path, data: bytes, *, mode: int | None = None, create_dirs: bool = True
) -> Written:
    """Atomically replace (or create) `path`, which must lie below `anchor` as written.

    `mode` None: an existing file keeps its permission bits and a new one gets 0o666 minus
    the umask. An explicit `mode` (e.g. 0o444 for read-only files) is asked of `open(2)` for
    the new file, so the umask still applies. Raises `WriteRefused` for links and
    non-regular files on the way, `OSError` for anything the system refuses.
    """
    parts = relative_parts(anchor, path)
    shown = _shown(parts)
    with _folder(anchor, parts[:-1], create_dirs) as dir_fd:
        name = parts[-1]
        old = _existing(dir_fd, name, shown)
        keep: int | None = None
        if mode is not None:
            create_mode = mode
        elif old is not None:
            keep = create_mode = stat.S_IMODE(old.st_mode) & _KEPT_BITS
        else:
            create_mode = 0o666
        fd, temp = _create_temp(dir_fd, create_mode)
        renamed = False
        try:
            try:
                if keep is not None:
                    os.fchmod(fd, keep)
                _write_all(fd, data)
                os.fsync(fd)
                final_mode = stat.S_IMODE(os.fstat(fd).st_mode)
            finally:
                os.close(fd)
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            renamed = True
        finally:
            if not renamed:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=dir_fd)
        _fsync_quietly(dir_fd)
    return Written(path=path, created=old is None, mode=final_mode)


def write_text(
    anchor: Path, path: Path, text: str, *, mode: int | None = None, create_dirs: bool = True
) -> Written:
    """`write_bytes` with `text` as UTF-8, byte-exact (no newline translation)."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise WriteRefused(
            f"{path}: the text cannot be stored as UTF-8 ({exc.reason} at {exc.start})"
        ) from None
    return write_bytes(anchor, path, data, mode=mode, create_dirs=create_dirs)


def _checked_reader(fd: int, shown: str, max_bytes: int | None) -> BinaryIO:
    """A reader for the open descriptor `fd` if it is a regular file within `max_bytes`;
    closes `fd` and raises `WriteRefused` otherwise."""
    try:
        st = os.fstat(fd)
        wrong = _wrong_kind(st.st_mode, shown, folder=False, verb="reads")
        if wrong is not None:
            raise WriteRefused(wrong)
        if max_bytes is not None and st.st_size > max_bytes:
            raise FileTooLarge(
                f"{shown} is {st.st_size} bytes, more than the {max_bytes} bytes read at most"
            )
        # A regular file ignores O_NONBLOCK; clear it all the same, reads then never see EAGAIN.
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


@contextlib.contextmanager
def open_regular(
    anchor: Path, path: Path, *, max_bytes: int | None = MAX_READ_BYTES
) -> Iterator[BinaryIO]:
    """The regular file `path` below `anchor`, open for reading.

    Walked like a write: a link on the way or at the end, a FIFO, a socket, a device or a
    folder is refused with `WriteRefused` (never followed, never blocked on), and a file
    larger than `max_bytes` (None: no bound, for callers that stream) with `FileTooLarge`.
    Raises `FileNotFoundError` when nothing is there.
    """
    parts = relative_parts(anchor, path)
    shown = _shown(parts)
    with _folder(anchor, parts[:-1], create=False) as dir_fd:
        try:
            fd = os.open(parts[-1], _READ_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            raise
        except OSError as exc:  # ELOOP for a link: say what is there
            raise _refuse_existing(dir_fd, parts[-1], shown, exc, False, "reads") from None
    with _checked_reader(fd, shown, max_bytes) as handle:
        yield handle


def _read_bounded(handle: BinaryIO, shown: str, max_bytes: int | None) -> bytes:
    if max_bytes is None:
        return handle.read()
    data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:  # it grew after the check
        raise FileTooLarge(f"{shown} is larger than the {max_bytes} bytes read at most")
    return data


def read_bytes(anchor: Path, path: Path, *, max_bytes: int | None = MAX_READ_BYTES) -> bytes | None:
    """The content of the regular file `path` below `anchor`, or None if there is none.

    See `open_regular`: links, FIFOs, devices, folders and files over `max_bytes` are
    refused with `WriteRefused` (never followed, never blocked on, never read whole).
    """
    try:
        with open_regular(anchor, path, max_bytes=max_bytes) as handle:
            return _read_bounded(handle, _shown(relative_parts(anchor, path)), max_bytes)
    except FileNotFoundError:
        return None


def read_text(anchor: Path, path: Path, *, max_bytes: int | None = MAX_READ_BYTES) -> str | None:
    """`read_bytes` decoded as UTF-8, byte-exact; raises UnicodeDecodeError for other bytes."""
    data = read_bytes(anchor, path, max_bytes=max_bytes)
    return None if data is None else data.decode("utf-8")


def read_file_bytes(
    path: Path, *, max_bytes: int | None = MAX_READ_BYTES, follow_link: bool = False
) -> bytes | None:
    """The content of the regular file at `path`, or None if there is none.

    For a path its caller validated already (the folders on the way are not walked): the
    file itself is opened `O_NOFOLLOW | O_NONBLOCK` and checked on its descriptor, so a link,
    FIFO, device, folder or file over `max_bytes` under its name is refused with
    `WriteRefused`, never followed, blocked on or read whole. `follow_link` is for the
    user's own files (a dotfile manager links them): the link is followed, the rest holds.
    """
    flags = _READ_FLAGS & ~_NOFOLLOW if follow_link else _READ_FLAGS
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        try:
            st = os.lstat(path)
        except OSError:
            raise exc from None
        wrong = _wrong_kind(st.st_mode, str(path), folder=False, verb="reads")
        raise (exc if wrong is None else WriteRefused(wrong)) from None
    with _checked_reader(fd, str(path), max_bytes) as handle:
        return _read_bounded(handle, str(path), max_bytes)


def disk_text(path: Path, *, max_bytes: int | None = MAX_READ_BYTES) -> str | None:
    """`read_file_bytes` as UTF-8 text; None when there is no regular file of at most
    `max_bytes` at `path`, it cannot be read, or its bytes are not UTF-8."""
    try:
        data = read_file_bytes(path, max_bytes=max_bytes)
        return None if data is None else data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


@contextlib.contextmanager
def open_folder(anchor: Path, path: Path) -> Iterator[int]:
    """A descriptor of the existing folder `path` below `anchor` (or `anchor` itself),
    walked without following links; `WriteRefused` for a link or a non-folder on the way."""
    parts = () if path == anchor else relative_parts(anchor, path)
    with _folder(anchor, parts, create=False) as fd:
        yield fd


def ensure_folder(anchor: Path, path: Path) -> None:
    """Create the folder `path` below `anchor` (and missing parents) without following links."""
    with _folder(anchor, relative_parts(anchor, path), create=True):
        pass


def link_problem(anchor: Path, path: Path, *, folder: bool = False) -> str | None:
    """Why `path` below `anchor` cannot be reached without following a link: the first part
    that is a symbolic link or not a folder, or the last part if it is not a regular file
    (with `folder`, not a folder). None when nothing is in the way.

    Missing parts are fine (a write would create them). Nothing is opened or created: this
    is the early check that gives a clear message; the walk in `write_text` is the wall.
    """
    try:
        parts = relative_parts(anchor, path)
    except WriteRefused as exc:
        return str(exc)
    current = anchor
    for index, name in enumerate(parts):
        current = current / name
        shown = _shown(parts[: index + 1])
        try:
            st = current.lstat()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"cannot inspect {shown}: {exc.strerror or exc}"
        wrong = _wrong_kind(st.st_mode, shown, folder or index < len(parts) - 1)
        if wrong is not None:
            return wrong
    return None
