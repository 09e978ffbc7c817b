"""Output files of the command-line tools, written whole or not at all.

``rankengine replay -o FILE`` and ``--svg FILE`` write through
:func:`output_file`: the text goes to a temporary file beside ``FILE``,
which replaces ``FILE`` only when everything is written.  An error or a
Ctrl-C on the way leaves ``FILE`` as it was (absent, or the previous
version) and removes the temporary file, so no half-written export is
ever mistaken for a whole one.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> path = os.path.join(folder, "out.txt")
>>> with output_file(path) as out:
...     _ = out.write("whole\\n")
>>> open(path).read(), os.listdir(folder)
('whole\\n', ['out.txt'])
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import tempfile
from collections.abc import Iterator
from typing import Final, TextIO

__all__ = ["OutputError", "output_file"]

#: Characters of FILE's name kept in the temporary file's name.  The
#: temporary name adds 14 (a dot, a dot, 8 random, ".tmp"), and a name
#: open() accepts may already be the longest the folder allows (255 bytes
#: on most file systems; 4 bytes a character at worst): 50 keeps it short
#: enough anywhere, and still says whose temporary file it is.
TEMP_NAME_CHARS: Final = 50


class OutputError(OSError):
    """An output file cannot be created or put in place; the message names it."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cannot write {path or repr(path)}: {reason}")
        self.path = path


@contextlib.contextmanager
def output_file(path: str, *, newline: str | None = None) -> Iterator[TextIO]:
    """A UTF-8 text file at ``path`` that appears only once it is complete.

    Only a new file or a plain regular file (one name, no symbolic link)
    is replaced; anything else is written through, in place, as ``open``
    would: a symbolic link (``/dev/stdout``, or a link the user keeps
    pointing where it points), a named pipe or a device, a file with other
    hard links.  A new file gets the permissions ``open`` would give it
    (``0o666`` less the umask); a replaced one keeps its own, and one that
    ``open`` could not write (read-only to this user) is refused, not replaced.

    The text is fsynced before the rename, so a power cut too leaves
    either the previous ``FILE`` or the whole new one.

    Runtime complexity: O(size of what is written) plus one fsync

    :raises OutputError: if the file cannot be created (``path`` is empty,
        its folder is missing or not writable, ``path`` is a directory or a
        file this user may not write); ``path`` is unchanged.  An error while
        writing propagates as it is.
    """
    if not path:  # else the temporary file goes beside the working folder
        raise OutputError(path, "the file name is empty")
    if os.path.isdir(path):
        raise OutputError(path, "it is a directory")
    try:
        info: os.stat_result | None = os.lstat(path)  # a link itself, not its target
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise OutputError(path, exc.strerror or str(exc)) from exc
    mode = None if info is None else info.st_mode
    if info is not None and (not stat.S_ISREG(info.st_mode) or info.st_nlink > 1):
        try:
            direct = open(path, "w", encoding="utf-8", newline=newline)  # noqa: SIM115
        except OSError as exc:
            raise OutputError(path, exc.strerror or str(exc)) from exc
        with direct:
            yield direct
        return
    if info is not None:
        # Renaming needs only the folder's permission: check that the file
        # itself may be written, as open() would (a read-only export stays).
        try:
            os.close(os.open(path, os.O_WRONLY))
        except OSError as exc:
            raise OutputError(path, exc.strerror or str(exc)) from exc
    try:
        # A new file is created 0o666 and the kernel takes the umask off, as
        # for open(); a replacement is created owner-only and gets the mode
        # of the file it replaces once written, so no other user reads it
        # meanwhile.
        fd, temp = _create_beside(path, 0o666 if mode is None else 0o600)
    except OSError as exc:
        raise OutputError(path, exc.strerror or str(exc)) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as out:
            yield out
            # on disk before the rename: else a power cut can keep the
            # rename and lose the text (FILE empty, the previous one gone)
            out.flush()
            os.fsync(out.fileno())
        if mode is not None:  # replacing a file: keep its permissions
            os.chmod(temp, stat.S_IMODE(mode))
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temp)
        raise


def _create_beside(path: str, mode: int) -> tuple[int, str]:
    """Create a new temporary file in ``path``'s folder, named after it, with
    permissions ``mode`` less the umask (applied by the kernel, as for any
    new file: reading the umask would mean setting it, which races with
    other threads' new files); return its descriptor, open for writing, and
    its path.

    The name is taken as ``tempfile.mkstemp`` takes one (which always
    creates 0o600): a random name, opened with ``O_EXCL``, which neither
    reuses a file nor follows a symbolic link; a name already taken is
    replaced by another.

    Runtime complexity: O(1) system calls (a retry per name already taken)
    """
    folder = os.path.dirname(os.path.abspath(path))
    prefix = f".{os.path.basename(path)[:TEMP_NAME_CHARS]}."
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(tempfile.TMP_MAX):
        temp = os.path.join(folder, f"{prefix}{secrets.token_hex(4)}.tmp")
        try:
            return os.open(temp, flags, mode), temp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", folder)
