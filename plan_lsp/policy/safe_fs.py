"""The one way the server writes a file: atomically, from a trusted anchor, never through a link.

Each walk opens one folder at a time with `O_DIRECTORY | O_NOFOLLOW` on the previous
descriptor, so a link is refused even when swapped in after a check. A write goes to a hidden
`O_EXCL` temporary file, fsynced and renamed over a regular file or nothing; the umask is
never read (that sets it, process-wide). Reads open `O_NOFOLLOW | O_NONBLOCK` and `fstat`:
a regular file within a size bound only. POSIX only.
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
_KEPT_BITS = 0o777  # what an existing file keeps when it is rewritten
# What the server reads whole from a workspace at most, unless its caller says otherwise.
MAX_READ_BYTES = 64 * 1024 * 1024


class WriteRefused(OSError):
    """A read or write the server will not do; the message says which path and why."""


class FileTooLarge(WriteRefused):
    """A file larger than the reader's bound; it was not read."""


@dataclass(frozen=True)
class Written:
    path: Path
    created: bool  # no file existed under the name before
    mode: int  # the permission bits the file has now


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


def file_kind(st_mode: int) -> str:
    """What a mode says is there, in words ("a FIFO", "a symbolic link")."""
    return next((name for is_kind, name in _KINDS if is_kind(st_mode)), "something unknown")


_KINDS = (
    (stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
    (stat.S_ISREG, "a regular file"),
)  # fmt: skip


def _wrong_kind(st_mode: int, shown: str, folder: bool, verb: str = "writes") -> str | None:
    """Why what is there (a link not followed) is not the folder or regular file wanted."""
    if stat.S_ISLNK(st_mode):
        return f"{shown} is a symbolic link; the server never follows links where it {verb}"
    if folder and not stat.S_ISDIR(st_mode):
        return f"{shown} is {file_kind(st_mode)}, not a folder"
    if not folder and not stat.S_ISREG(st_mode):
        return f"{shown} is {file_kind(st_mode)}, not a regular file"
    return None


def _refuse_existing(
    parent_fd: int | None, name: str, shown: str, exc: OSError, folder: bool, verb: str = "writes"
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
    """A descriptor for `anchor/parts...`, walked without following links (the trusted
    anchor is opened as given); `create` makes missing folders, fsyncing their parents."""
    if not _SUPPORTED:
        raise WriteRefused(
            "this system lacks directory file descriptors with O_NOFOLLOW, without which "
            "files cannot be written safely"
        )
    fd = os.open(anchor, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for index, name in enumerate(parts):
            child, created = _open_dir(fd, name, "/".join(parts[: index + 1]), create)
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


def write_text(anchor: Path, path: Path, text: str, *, mode: int | None = None) -> Written:
    """Atomically replace (or create) `path`, which must lie below `anchor` as written, with
    `text` as UTF-8, byte-exact. `mode` None keeps an existing file's bits (a new one: 0o666
    minus the umask)."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise WriteRefused(
            f"{path}: the text cannot be stored as UTF-8 ({exc.reason} at {exc.start})"
        ) from None
    parts = relative_parts(anchor, path)
    shown = "/".join(parts)
    with _folder(anchor, parts[:-1], create=True) as dir_fd:
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
        try:
            with open(fd, "wb") as handle:  # a buffered write writes all of `data`
                if keep is not None:
                    os.fchmod(fd, keep)
                handle.write(data)
                handle.flush()
                os.fsync(fd)
                final_mode = stat.S_IMODE(os.fstat(fd).st_mode)
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
        _fsync_quietly(dir_fd)
    return Written(path=path, created=old is None, mode=final_mode)


def _checked_reader(fd: int, shown: str, max_bytes: int | None) -> BinaryIO:
    """A reader for `fd` if a regular file within `max_bytes`; else closes it, WriteRefused."""
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
    """The regular file `path` below `anchor`, open for reading, walked like a write;
    `WriteRefused` for anything else on the way, `FileTooLarge` over `max_bytes`."""
    parts = relative_parts(anchor, path)
    shown = "/".join(parts)
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
    """The content of the regular file `path` below `anchor` (`open_regular`), or None."""
    try:
        with open_regular(anchor, path, max_bytes=max_bytes) as handle:
            return _read_bounded(handle, "/".join(relative_parts(anchor, path)), max_bytes)
    except FileNotFoundError:
        return None


def read_text(anchor: Path, path: Path, *, max_bytes: int | None = MAX_READ_BYTES) -> str | None:
    """`read_bytes` decoded as UTF-8, byte-exact; raises UnicodeDecodeError for other bytes."""
    data = read_bytes(anchor, path, max_bytes=max_bytes)
    return None if data is None else data.decode("utf-8")


def read_file_bytes(
    path: Path, *, max_bytes: int | None = MAX_READ_BYTES, follow_link: bool = False
) -> bytes | None:
    """The content of the regular file at `path` (validated by the caller: only the file
    itself is opened without following a link and checked), or None. `follow_link` is for
    the user's own files, which a dotfile manager links."""
    flags = _READ_FLAGS & ~_NOFOLLOW if follow_link else _READ_FLAGS
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refuse_existing(None, str(path), str(path), exc, False, "reads") from None
    with _checked_reader(fd, str(path), max_bytes) as handle:
        return _read_bounded(handle, str(path), max_bytes)


def disk_text(path: Path, *, max_bytes: int | None = MAX_READ_BYTES) -> str | None:
    """`read_file_bytes` as UTF-8 text; None when missing, unreadable, too large or not UTF-8."""
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
    """Why `path` below `anchor` cannot be reached without a link or wrong kind on the way,
    or None (missing parts are fine). The early, clear message; the walk is the wall."""
    try:
        parts = relative_parts(anchor, path)
    except WriteRefused as exc:
        return str(exc)
    current = anchor
    for index, name in enumerate(parts):
        current = current / name
        shown = "/".join(parts[: index + 1])
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
