"""Reading a module's bytes from a file, a pipe or memory, within limits.

Only regular files and pipes (FIFOs, ``<(...)``) are read; devices,
sockets and directories are refused.  A pipe with no writer is given up on
after :data:`PIPE_WAIT_SECONDS`.  Input larger than ``max_size`` bytes
(default :data:`MAX_INPUT_SIZE`) is refused, before reading it when the
size is known.
"""

from __future__ import annotations

import os
import select
import stat

from ..errors import InputError
from .diagnostics import MEMORY

#: The largest input :func:`load` reads by default, in bytes (1 GiB).
MAX_INPUT_SIZE = 1 << 30

#: How long to wait for the first bytes from a pipe before giving up on it.
PIPE_WAIT_SECONDS = 30.0


def _size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << (shift - 4)) == 0:
            return f"{n / (1 << shift):g} {unit}"
    return f"{n} bytes"


def _too_large(name: str, max_size: int) -> InputError:
    return InputError(
        f"{name}: larger than {_size_text(max_size)}, the most no64 reads "
        "(raise the limit with --max-input-size, or max_size= in the API)"
    )


def _not_found(path: str) -> InputError:
    hint = ""
    if "\n" in path or path.lstrip().startswith(("module", "HloModule", "#loc")):
        hint = " (to load module text held in memory, pass it as bytes)"
        path = path.strip().splitlines()[0][:60] + "..."
    return InputError(f"{path}: no such file{hint}")


_FILE_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    for test, kind in _FILE_KINDS:
        if test(mode):
            return kind
    return "not a regular file"


def _read_to_end(fd: int, name: str, max_size: int | None, *, pipe: bool) -> bytes:
    """Read ``fd`` to its end, refusing it past ``max_size`` bytes.

    A pipe (``pipe``, opened non-blocking) is polled: opening a FIFO that no
    process writes to, or reading one that stops sending, would block for
    ever, so give up after :data:`PIPE_WAIT_SECONDS` without data.
    """
    poller = None
    if pipe:
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP)
    chunks: list[bytes] = []
    total = 0
    while True:
        if poller is not None and not poller.poll(PIPE_WAIT_SECONDS * 1000):
            what = "nothing written to this pipe" if not chunks else "this pipe stalled"
            raise InputError(
                f"{name}: {what} for {PIPE_WAIT_SECONDS:g} s (is a program writing to it?)"
            )
        try:
            chunk = os.read(fd, 1 << 20 if pipe else 1 << 24)
        except BlockingIOError:
            continue
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if max_size is not None and total > max_size:
            raise _too_large(name, max_size)
        chunks.append(chunk)


def read_source(
    source: str | os.PathLike[str] | bytes, max_size: int | None = MAX_INPUT_SIZE
) -> tuple[str, bytes, str | None]:
    """Return (display name, content, path or None for in-memory data).

    ``source`` is bytes held in memory, or a file name (``str``, ``bytes``
    path or path-like: any name the OS gives, UTF-8 or not).
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return MEMORY, bytes(source), None
    path = os.fsdecode(os.fspath(source))
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise _not_found(path) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{path}: is a directory, not a file")
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise InputError(
            f"{path}: is {file_kind(mode)}, not a file; no64 reads regular files and pipes"
        )
    try:
        # Non-blocking, so that opening a FIFO no program writes to returns.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise _not_found(path) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            if max_size is not None and st.st_size > max_size:
                raise _too_large(path, max_size)
            os.set_blocking(fd, True)
            data = _read_to_end(fd, path, max_size, pipe=False)
        elif stat.S_ISFIFO(st.st_mode):
            data = _read_to_end(fd, path, max_size, pipe=True)
        else:  # replaced since the check above
            raise InputError(f"{path}: is {file_kind(st.st_mode)}, not a file")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return path, data, path
