"""`cold clean`: remove the leftovers of interrupted sends (NAME.partial) and of interrupted
parity and repair runs (the directories NAME.parity.partial and NAME.repair.partial), and
nothing else.

A send killed outright (SIGKILL, a power cut) cannot remove its NAME.partial.  No command
ever counts one as a stream, but `cold check` reports it and `cold prune` deletes nothing
while one exists, so it is removed here, only when asked (--yes), and only when at that very
moment all of this holds:

* the caller holds the archive exclusively (zverify.cold.store.lock: no send, prune or reader runs);
* the entry is a regular file named *.partial with a single link, owned by root, the
  archive's owner or the user running zverify (zverify.cold.entries);
* nobody holds its flock: the send writing a .partial holds it until the rename, so a file
  whose lock this command gets is no running send's.  The lock is held across the unlink,
  and the name must still be the file that was opened and locked.

A work directory is removed the same way, under its own flock (the run holds it): what is
in it is unlinked (never followed: a repair's link to the damaged stream only loses a name),
and a directory holding a subdirectory is left alone.  Anything else named *.partial is
reported with why it was left alone.
"""

import errno
import fcntl
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass

from zverify.cold import entries, names
from zverify.cold.entries import FileStamp
from zverify.cold.names import WORK_DIRS
from zverify.cold.store import Store, bucket_of, lock, workdir
from zverify.cold.store.workdir import fsync_dir
from zverify.errors import ArchiveError, ColdError


@dataclass
class Leftover:
    name: str
    bytes: int = 0
    removed: bool = False
    left: str | None = None  # why it is not removed (None: a leftover that may go)
    in_progress: str | None = None  # dry run only: a running send holds it (who): no leftover


def clean(store: Store, remove: bool) -> list[Leftover]:
    """Every *.partial of the store's places, in name order; with remove, the leftovers
    removed.  Raises ArchiveError when a place cannot be listed, ColdError when a removal
    fails."""
    if not store.uses_local_files:
        return _clean_uploads(store, remove)
    found = []
    for entry in store.entries():
        if entry.error is not None and entry.st is not None:
            # a subdirectory that --recursive cannot list may hold leftovers: not "clean"
            raise ArchiveError(f"cannot list {names.shown(entry.key)}: {entry.error.strerror}")
        if entry.name.endswith(names.PARTIAL):
            item = _one(store.local_path(entry.key), entry.key, entry.owner, remove)
            if item is not None:
                found.append(item)
    touched = {store.directory_of(f.name) for f in found if f.removed}
    for directory in sorted(touched):
        try:
            fsync_dir(directory)
        except OSError as err:
            raise ColdError(f"the fsync of {directory} failed: {err.strerror}") from None
    return found


def _clean_uploads(store: Store, remove: bool) -> list[Leftover]:
    """A bucket's unfinished multipart uploads: one without a new part for IDLE_SECONDS is
    a leftover (a running send uploads a part at least every few minutes), aborted with
    remove; a younger one is left as a send's in progress."""
    found = []
    for entry in store.entries():
        if entry.upload is None:
            continue
        bucket = bucket_of(store)  # only a bucket lists uploads
        try:
            size, idle, left = bucket.upload_state(entry)
        except OSError as err:
            found.append(Leftover(entry.key, left=f"cannot list its parts: {err.strerror}"))
            continue
        item = Leftover(entry.key, size)
        if not left:
            item.in_progress = f"an upload that received a part {idle:.0f} s ago"
            item.left = None if not remove else "a part arrived within the hour: not aborted"
        elif remove:
            bucket.abort_upload(entry)
            item.removed = True
        found.append(item)
    return found


def _one(path: str, name: str, owner: int, remove: bool) -> Leftover | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None  # gone meanwhile (only possible without --yes: a send finished)
    except OSError as err:
        return Leftover(name, left=f"cannot stat: {err.strerror}")
    if stat.S_ISDIR(st.st_mode) and name.endswith(WORK_DIRS):
        return _work_dir(path, name, st, owner, remove)
    if not stat.S_ISREG(st.st_mode):
        return Leftover(name, left=f"{entries.what(path, st)}, not a send's file")
    item = Leftover(name, st.st_size)
    doubts = entries.doubts(st, owner)
    if doubts:
        item.left = f"{doubts[0][1]}: not this archive's own file"
        return item
    return _remove_if_left(item, path, st, remove, "send", _unlink_same)


def _unlink_same(path: str, st: os.stat_result, _fd: int) -> str | None:
    if not FileStamp.of(st).same_file(os.lstat(path)):
        return "replaced while it was looked at: not removed"
    os.unlink(path)
    return None


def _work_dir(
    path: str, name: str, st: os.stat_result, owner: int, remove: bool
) -> Leftover | None:
    item = Leftover(name)
    doubts = [d for d in entries.doubts(st, owner) if d[0] != "hard-link"]  # a directory's links
    if doubts:
        item.left = f"{doubts[0][1]}: not this archive's own directory"
        return item
    return _remove_if_left(item, path, st, remove, "parity or repair run", _empty_work_dir)


def _empty_work_dir(path: str, _st: os.stat_result, fd: int) -> str | None:
    inside = [os.lstat(n, dir_fd=fd) for n in os.listdir(path)]
    if any(stat.S_ISDIR(s.st_mode) for s in inside):
        return "holds a directory: not a zverify work directory"
    workdir.empty_and_remove(path, fd)
    return None


def _remove_if_left(
    item: Leftover,
    path: str,
    st: os.stat_result,
    remove: bool,
    run: str,
    remove_it: Callable[[str, os.stat_result, int], str | None],
) -> Leftover | None:
    """Open the .partial file or work directory (still the entry that was listed); without
    remove, say whether a running send (run) holds it; with remove, take its lock (refused:
    a run that does not hold the archive's lock has it) and remove_it(path, st, fd), which
    says why it is left or removes it.  None when it vanished while it was removed."""
    opener = entries.open_directory if stat.S_ISDIR(st.st_mode) else entries.open_regular
    try:
        fd = opener(path, FileStamp.of(st))
    except (OSError, entries.Changed) as err:
        item.left = f"cannot open: {err.strerror}" if isinstance(err, OSError) else str(err)
        return item
    try:
        if stat.S_ISDIR(st.st_mode):
            item.bytes = sum(os.lstat(n, dir_fd=fd).st_size for n in os.listdir(path))
        if not remove:
            if lock.partial_in_progress(fd):
                item.in_progress = _writing(fd, run)
            return item
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # while this command holds the archive: not a zverify run
            item.left = f"{_writing(fd, run)} that does not hold the archive's lock"
            return item
        item.left = remove_it(path, st, fd)
        item.removed = item.left is None
        return item
    except OSError as err:
        if err.errno == errno.ENOENT:
            return None
        raise ColdError(f"removing {names.shown(item.name)} failed: {err.strerror}") from None
    finally:
        os.close(fd)


def _writing(fd: int, run: str = "send") -> str:
    who = lock.holders(fd)
    return f"being written by a running {run}{f' ({who})' if who else ''}"
