"""Writing bytes to a file without leaving it half written, or to a stream.

A regular file is written to a temporary name beside it and renamed into
place, keeping an overwritten file's permissions and owner; a symbolic link
is written through; a character device or FIFO is written to as it is.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat

from ..errors import OutputError
from .sources import file_kind


def destination_kind(path: str, overwrite: bool) -> str:
    """Whether ``path`` may be written, and how: ``"file"`` (a new or, with
    ``overwrite``, an existing regular file, replaced atomically) or
    ``"stream"`` (a character device or FIFO, written to as it is).

    Raises:
      OutputError: What :func:`save` would refuse, before any work is done.
    """
    try:
        st = os.stat(path)  # through symbolic links
    except FileNotFoundError:
        return "file"  # new (also the target of a dangling link)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise OutputError(f"{path}: is a directory")
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "stream"
    if not stat.S_ISREG(mode):
        raise OutputError(f"{path}: is {file_kind(mode)}; refusing to write to it")
    if _is_special_name(path):
        # /dev/stdout, /dev/fd/N, /proc/self/fd/N naming a file the shell
        # opened (``> out.mlir``): replacing the file would lose the output.
        return "stream"
    if not overwrite:
        raise OutputError(f"{path}: file exists; refusing to overwrite it")
    return "file"


_FD_NAME = re.compile(r"/(?:dev/(?:stdout|stderr|fd/\d+)|proc/(?:self|\d+)/fd/\d+)")


def _is_special_name(path: str) -> bool:
    """Whether ``path`` names an open file descriptor (``/dev/stdout``, ...)."""
    return _FD_NAME.fullmatch(os.path.abspath(path)) is not None


def write_through(path: str, data: bytes) -> None:
    """Write ``data`` to a character device or FIFO (or a file the shell
    opened, named by ``/dev/stdout``), as it is."""
    try:
        # Non-blocking open: a FIFO without a reader fails (ENXIO) at once
        # instead of waiting for one.
        flags = os.O_WRONLY | os.O_NONBLOCK | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OutputError(f"{path}: no program reads from this pipe") from None
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _target(path: str) -> str:
    """The file a path names once symbolic links are followed; ``path``
    itself when it is no link."""
    if not os.path.islink(path):
        return path
    return os.path.realpath(path)


def write_atomically(path: str, data: bytes, overwrite: bool) -> None:
    shown = path
    path = _target(path)  # write through links: replace their target
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp")
    try:
        old = os.stat(path) if overwrite and os.path.exists(path) else None
        if old is not None and not _same_owner_possible(old):
            # The new file could not be given the old one's owner: write
            # into the old file instead (not atomic, but it keeps its owner).
            with open(path, "r+b") as f:
                f.write(data)
                f.truncate()
                f.flush()
                os.fsync(f.fileno())
            return
        # 0o666 lets the umask decide a new file's permissions, as for open().
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if old is not None:
                _copy_owner_and_mode(f.fileno(), old)
            os.fsync(f.fileno())
        if overwrite:
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path)  # atomic, and fails if path appeared meanwhile
        except FileExistsError:
            raise OutputError(f"{shown}: file exists; refusing to overwrite it") from None
        except OSError:
            # File systems without hard links: check, then rename.
            if os.path.lexists(path):
                raise OutputError(f"{shown}: file exists; refusing to overwrite it") from None
            os.replace(tmp, path)
    except OSError as exc:
        raise OutputError(f"{shown}: cannot write: {exc.strerror or exc}") from exc
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _same_owner_possible(old: os.stat_result) -> bool:
    """Whether a new file can be given ``old``'s owner and group."""
    if not hasattr(os, "geteuid"):
        return True
    if os.geteuid() == 0:
        return True
    return old.st_uid == os.geteuid() and (
        old.st_gid == os.getegid() or old.st_gid in os.getgroups()
    )


def _copy_owner_and_mode(fd: int, old: os.stat_result) -> None:
    if hasattr(os, "fchown"):
        new = os.fstat(fd)
        if (new.st_uid, new.st_gid) != (old.st_uid, old.st_gid):
            os.fchown(fd, old.st_uid, old.st_gid)
    os.fchmod(fd, stat.S_IMODE(old.st_mode))
