"""The work directory of a parity or repair run: NAME.parity.partial/ or NAME.repair.partial/
in the archive (the same filesystem: what is made there is renamed into place), and
fsync_dir(), which makes a rename into the archive (or an unlink) durable.

It is created new (never an existing one) and flock()ed for the run, like a send's .partial
(zverify.cold.store.lock): `cold check` tells a running one from the leftover of a killed one, and
`cold clean` removes only a leftover.  It is removed at the end, whatever happened, by
unlinking what is in it (never following or writing anything).
"""

import contextlib
import errno
import os
import time

from zverify.cold import entries, names
from zverify.cold.store import lock
from zverify.errors import ColdError

SETTLE = 2.0  # seconds to wait for a FUSE filesystem's delayed release (.fuse_hidden files)


def fsync_dir(directory: str) -> None:
    """fsync the directory itself: a rename or unlink in it survives a power cut only then.
    Raises OSError."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make(path: str) -> int:
    """Create the directory and hold its lock; its fd.  Raises ColdError."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        raise ColdError(
            f"{names.shown(path)} exists (another run, or the leftover of an interrupted one: "
            "`zverify cold clean --yes` removes a leftover)"
        ) from None
    except OSError as err:
        raise ColdError(f"cannot create {names.shown(path)}: {err.strerror}") from None
    fd = entries.open_directory(path)
    lock.hold_partial(fd)
    return fd


def remove(path: str, fd: int) -> str | None:
    """Empty and remove the directory, then close fd; what is left behind, in words, or None.
    Never raises: a leftover must not hide what the run itself found."""
    try:
        empty_and_remove(path, fd)
    except OSError as err:
        return (
            f"{names.shown(path)} could not be removed ({err.strerror}): "
            "`zverify cold clean --yes` removes it"
        )
    finally:
        os.close(fd)
    return None


def empty_and_remove(path: str, fd: int) -> None:
    """Unlink what is in the directory (open on fd), then the directory.  Raises OSError
    (IsADirectoryError for a subdirectory: never removed)."""
    deadline = time.monotonic() + SETTLE
    while True:
        try:
            # listed by path: FUSE may answer a re-read of one open directory from cache
            for name in os.listdir(path):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=fd)
            os.rmdir(path)
            return
        except FileNotFoundError:
            return  # the directory itself is gone
        except OSError as err:
            # FUSE renames a file still open to .fuse_hidden* until it is released
            if err.errno != errno.ENOTEMPTY or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
