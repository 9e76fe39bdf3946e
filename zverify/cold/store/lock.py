"""Who may use an archive directory at the same time: flock(2) on two lock files inside it.

  .zverify-writers.lock   exclusive: `cold send`, `cold prune --yes`, `cold clean --yes` (and
                          any future `cold repair`): one command changes the archive at a time
  .zverify-readers.lock   shared: `cold check`, `cold restore`, `cold prune` without --yes,
                          `cold clean` without --yes (they read);
                          exclusive: `cold prune --yes`, `cold clean --yes` (they delete)

So a send runs beside checks and restores (it only adds: a stream appears by an atomic rename
of NAME.partial, which no reader counts), while a prune or clean deletes only when nobody
reads, and nobody reads while one deletes.  A deleter takes the writers' lock first, then the
readers'.  Each NAME.partial is also flock()ed exclusively by the send writing it, so that
`cold check` tells a send in progress from the leftover of one that was killed, and `cold
clean` proves a leftover is nobody's before it removes it.

A lock that is taken is refused at once with one line naming the archive and, when this host
can tell (/proc/locks), the process holding it (exit 2): like `flock -n` in a cron job, a
second run never queues up silently behind the first.  --wait SECONDS waits that long, saying
so once on stderr.  The kernel drops a lock with its process, however it ends (SIGKILL too).
The last holder of a lock file removes it (after locking, a command checks that the name
still leads to the file it locked, else it takes the new one), so an archive is left as it
was found; a killed command leaves its lock file, which is harmless, and `cold check` does
not count lock files.

The locks are advisory: they keep zverify commands apart, not other programs.  Readers that
cannot create or open the lock file (a read-only archive, another user's) read without it,
saying so unless the filesystem is read-only (then nobody can change it either).
"""

import contextlib
import errno
import fcntl
import os
import stat
import sys
import time
from collections.abc import Iterator

from zverify.errors import ColdError

WRITERS = ".zverify-writers.lock"
READERS = ".zverify-readers.lock"
FILES = (WRITERS, READERS)
POLL = 0.2  # seconds between tries while waiting


class Busy(ColdError):
    """Another zverify holds a lock this command needs (exit 2: nothing was done)."""


@contextlib.contextmanager
def reading(directory: str, wait: float = 0) -> Iterator[None]:
    """Shared lock against deleters, for the whole of a read (check, restore, dry runs)."""
    deadline = time.monotonic() + wait
    held = _acquire(directory, READERS, fcntl.LOCK_SH, deadline, wait, "nothing was read")
    try:
        yield
    finally:
        if held is not None:
            _release(directory, READERS, held)


@contextlib.contextmanager
def writing(directory: str, wait: float = 0, deleting: bool = False) -> Iterator[None]:
    """The writers' lock (send; prune and clean with --yes), and with deleting also the
    readers' lock exclusively: nobody reads what is being deleted."""
    deadline = time.monotonic() + wait
    held: list[tuple[str, int]] = []
    try:
        for name in (WRITERS, READERS) if deleting else (WRITERS,):
            undone = "nothing was deleted" if name == READERS else "nothing was done"
            fd = _acquire(directory, name, fcntl.LOCK_EX, deadline, wait, undone)
            assert fd is not None
            held.append((name, fd))
        yield
    finally:
        for name, fd in reversed(held):
            _release(directory, name, fd)


def _acquire(
    directory: str, name: str, how: int, deadline: float, wait: float, undone: str
) -> int | None:
    """The lock file, opened (created if need be) and locked, and still the file of that
    name once locked: the last holder removes it (_release), and whoever locked the removed
    file opens the new one."""
    path = os.path.join(directory, name)
    while True:
        fd = _open(directory, name, write=how == fcntl.LOCK_EX)
        if fd is None:
            return None
        try:
            _take(fd, directory, name, how, deadline, wait, undone)
            try:
                current = os.lstat(path)
            except FileNotFoundError:
                current = None
            mine = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        if current is not None and (current.st_dev, current.st_ino) == (mine.st_dev, mine.st_ino):
            return fd
        os.close(fd)  # removed by its last holder meanwhile: take the new one


def _release(directory: str, name: str, fd: int) -> None:
    """Unlock, removing the lock file when nobody else holds or waits on it (so that an
    archive is left as it was found).  A shared holder first tries to become the only one."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.unlink(os.path.join(directory, name))
    except OSError:
        pass  # others hold it (they remove it), or the directory cannot be written
    finally:
        os.close(fd)


def hold_partial(fd: int) -> None:
    """Mark a NAME.partial as being written by this process (until its fd is closed)."""
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def partial_in_progress(fd: int) -> bool:
    """True when a running send holds the NAME.partial open on fd; False when nobody does (a
    leftover).  The shared probe is released at once and never keeps a send waiting."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


def holders(fd: int) -> str:
    """Who holds a lock on the file open on fd, in words, as far as /proc/locks can tell:
    'pid 123 (zverify cold send tank/data /cold)', or '' (another host, or no /proc)."""
    st = os.fstat(fd)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids: list[tuple[bool, int]] = []
    try:
        with open("/proc/locks") as f:
            for line in f:
                fields = line.split()
                if "->" in fields or len(fields) < 6:
                    continue  # "->": a process waiting for the lock, not holding it
                pid, where = fields[4], fields[5]
                if where.rsplit(":", 1)[-1] == str(st.st_ino) and pid.isdigit():
                    pids.append((where == dev, int(pid)))
    except OSError:
        return ""
    # btrfs and overlay show another device number than stat(): then the inode alone
    exact = sorted({p for same, p in pids if same}) or sorted({p for _, p in pids})
    named = [f"pid {p}{_command(p)}" for p in exact if p != os.getpid()]
    return ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read(4096).rstrip(b"\0").split(b"\0")
    except OSError:
        return ""
    if argv and os.path.basename(argv[0]).startswith(b"python") and len(argv) > 1:
        argv = argv[1:]  # the console script run by its interpreter
    words = [os.path.basename(argv[0]), *argv[1:]] if argv and argv[0] else []
    text = " ".join(w.decode("utf-8", "backslashreplace") for w in words)
    text = "".join(c if c.isprintable() else "?" for c in text)
    return f" ({text[:120]}{'...' if len(text) > 120 else ''})" if text else ""


def _open(directory: str, name: str, write: bool) -> int | None:
    """The lock file, created if need be; never a symlink, a FIFO or anything but a file.
    None for a reader that cannot have it (see the module's docstring)."""
    path = os.path.join(directory, name)
    safe = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        if write:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | safe, 0o644)
        else:
            try:
                fd = os.open(path, os.O_RDONLY | safe)
            except FileNotFoundError:
                fd = os.open(path, os.O_RDONLY | os.O_CREAT | safe, 0o644)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise ColdError(f"{path} is a symlink, not zverify's lock file: remove it") from None
        if not write and err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            if err.errno != errno.EROFS:
                print(
                    f"zverify: cannot lock {directory} ({err.strerror}): reading without "
                    "the lock (a prune running now could make files vanish: exit 2)",
                    file=sys.stderr,
                )
            return None
        raise ColdError(f"cannot open the lock file {path}: {err.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ColdError(f"{path} is not a regular file, not zverify's lock file: remove it")
    return fd


def _take(
    fd: int, directory: str, name: str, how: int, deadline: float, wait: float, undone: str
) -> None:
    said = False
    while True:
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        except OSError as err:  # e.g. ENOLCK on a filesystem without locks
            raise ColdError(f"cannot lock {directory}: {err.strerror}") from None
        busy = _busy(fd, directory, name, how)
        if time.monotonic() >= deadline:
            hint = "" if wait else " (--wait SECONDS waits for it)"
            raise Busy(f"{busy}; {undone}{hint}")
        if not said:
            print(f"zverify: waiting up to {wait:g} s: {busy}", file=sys.stderr, flush=True)
            said = True
        time.sleep(min(POLL, max(0.0, deadline - time.monotonic())))


def _busy(fd: int, directory: str, name: str, how: int) -> str:
    who = holders(fd) or "another process (not on this host, or not visible here)"
    if how == fcntl.LOCK_SH:
        return f"archive {directory} is busy: {who} is deleting from it"
    if name == READERS:
        return f"archive {directory} is being read by {who}"
    return f"archive {directory} is busy: {who} is writing to it"
