"""Walk one tree: a Python facade over the C walker.

TreeWalk turns options into a zverify._zvcore.Walker, flattens its batches
into an iterator of entries, and exposes counters for progress bars.  Every
algorithm (C_ALGORITHMS) is hashed by the C workers.  For one the C core does not
have, it would only stat and map files, and this module hash each batch's files in
a thread pool (hashlib and os.preadv release the GIL, so the threads run in
parallel), as MD5 and SHA-1 were until the C core had them (~25% slower).
"""

import errno
import os
import resource
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zverify import _zvcore
from zverify.entry import Entry, Kind
from zverify.errors import RootError, WalkError
from zverify.filters import Filter
from zverify.hashing import Algorithm, new_hasher

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

# 128 KiB reads keep each block in L2 between the kernel's copy and the hash;
# 1 MiB blocks measured 2.5x slower on a hot page cache (bench/test_core.py).
READ_BLOCK = 128 << 10
# Python-side hashing gets larger chunks: BLAKE3 only spreads work over threads for big inputs.
PY_HASH_BLOCK = 1 << 20
BIG_FILE = 1 << 20  # Python-side hashing: files at least this big are hashed in the pool
# Index of fields in a Record, for rebuilding one with a digest (names from C).
_DIGEST, _ERROR, _CHANGED = (
    _zvcore.Record.__match_args__.index(name) for name in ("digest", "error", "changed")
)


# Hashed by the C workers; the others (SHA-2, only to check other tools' lists) in Python.
C_ALGORITHMS = {
    Algorithm.XXH3_128: _zvcore.ALGO_XXH3_128,
    Algorithm.BLAKE3: _zvcore.ALGO_BLAKE3,
    Algorithm.SHA256: _zvcore.ALGO_SHA256,
    Algorithm.SHA512: _zvcore.ALGO_SHA512,
    Algorithm.MD5: _zvcore.ALGO_MD5,
    Algorithm.SHA1: _zvcore.ALGO_SHA1,
}


def default_threads() -> int:
    return max(1, min(os.cpu_count() or 1, 64))


# Descriptors.  A walk holds files open ahead of its hashing workers (up to 64 per thread
# keep a cold disk busy) and the directories on its way down (64 levels; deeper ones are
# reopened on the way back).  At most two walks run at once (SRC and DST), and Python keeps
# a few files of its own (reports, lists, manifests, a stream): each walk gets half of what
# RLIMIT_NOFILE leaves, so that `ulimit -n 256` works with any --threads.
FILES_PER_THREAD = 64
DIR_LEVELS = 64
CONCURRENT_WALKS = 2
FD_RESERVE = 32


def fd_budget(threads: int) -> tuple[int, int]:
    """(files, directories) one walk may hold open, after raising the soft RLIMIT_NOFILE
    as far as the hard limit lets it (and no further than the walks can use)."""
    files_wanted = FILES_PER_THREAD * threads
    in_use = _open_descriptors()
    wanted = in_use + FD_RESERVE + CONCURRENT_WALKS * (files_wanted + DIR_LEVELS)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        if raised > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
                soft = raised
            except (ValueError, OSError):
                pass  # keep the soft limit, and share it out
    if soft == resource.RLIM_INFINITY:
        return files_wanted, DIR_LEVELS
    share = (soft - in_use - FD_RESERVE) // CONCURRENT_WALKS
    dirs = max(1, min(DIR_LEVELS, share // 4))
    files = max(1, min(files_wanted, share - dirs))
    return files, dirs


def _open_descriptors() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 64  # no /proc: a guess on the safe side (the core waits out EMFILE anyway)


@dataclass(frozen=True)
class WalkOptions:
    algorithm: Algorithm = Algorithm.XXH3_128
    threads: int = field(default_factory=default_threads)
    hash_content: bool = True
    xattrs: bool = True
    one_file_system: bool = False
    filter: Filter = field(default_factory=Filter)
    # Only the paths in [lo, hi) in canonical order (hi None: to the end), for one work item
    # of a walk split across MPI ranks (zverify.mpi); such a walk is read through a Join.
    key_range: tuple[bytes, bytes | None] | None = None


class TreeWalk:
    """The entries of one tree in canonical order (pre-order, sorted names)."""

    def __init__(self, root: str | bytes, options: WalkOptions, side: str = "root") -> None:
        self.root = os.fsencode(root)
        self.side = side
        self.options = options
        c_algo = C_ALGORITHMS.get(options.algorithm) if options.hash_content else None
        in_c = c_algo is not None
        max_files, max_dirs = fd_budget(options.threads)
        try:
            self._walker = _zvcore.Walker(
                self.root,
                algo=c_algo if c_algo is not None else _zvcore.ALGO_NONE,
                threads=options.threads,
                block_size=READ_BLOCK,
                one_file_system=options.one_file_system,
                xattrs=options.xattrs,
                filter=options.filter.compiled(),
                max_open_files=max_files,
                max_dir_fds=max_dirs,
                range_lo=options.key_range[0] if options.key_range else None,
                range_hi=options.key_range[1] if options.key_range else None,
            )
        except OSError as err:
            raise RootError(side, os.fsdecode(self.root), err.strerror or str(err)) from None
        except MemoryError:
            raise WalkError(side, os.fsdecode(self.root), "out of memory") from None
        in_python = options.hash_content and not in_c
        self._pool: ThreadPoolExecutor | None = None
        if in_python:  # imported here: concurrent.futures (and logging) cost ~5 ms of start-up
            from concurrent import futures

            self._pool = futures.ThreadPoolExecutor(options.threads)
        self._py_bytes = 0

    def __iter__(self) -> Iterator[Entry]:
        for batch in self.batches():
            yield from batch

    def batches(self) -> Iterator[list[Entry]]:
        """The entries in the C core's batches, for consumers that work a list at a time."""
        try:
            for batch in self._walker:
                if self._pool is not None:
                    batch = self._hash_batch(batch)
                yield batch
        except _zvcore.WalkError as err:
            raise WalkError(self.side, os.fsdecode(self.root), err.strerror or str(err)) from None

    def c_walker(self) -> "_zvcore.Walker | None":
        """The C walker, when it does all the work (no hashing in Python): then its records
        may be consumed in C (compare.joined) instead of through this iterator."""
        return self._walker if self._pool is None else None

    def progress(self) -> tuple[int, int]:
        """(entries produced, file bytes read) so far."""
        entries, nbytes, _ = self._walker.counters()
        return entries, nbytes + self._py_bytes

    def excluded(self) -> int:
        """Entries the filter left out (an excluded directory once)."""
        return self._walker.counters()[2]

    def close(self) -> None:
        self._walker.close()
        if self._pool is not None:
            self._pool.shutdown()

    def _hash_batch(self, batch: list[Entry]) -> list[Entry]:
        """Large files go to the pool (the binding drops the GIL while hashing);
        small ones are hashed here: for them, handing work to threads that
        then fight over the GIL cost more than the hashing."""
        assert self._pool is not None
        big = {
            i: self._pool.submit(self._hash_entry, e)
            for i, e in enumerate(batch)
            if e.size >= BIG_FILE
        }
        small = [e if i in big else self._hash_entry(e) for i, e in enumerate(batch)]
        return [big[i].result() if i in big else e for i, e in enumerate(small)]

    def _hash_entry(self, entry: Entry) -> Entry:
        if entry.kind != Kind.FILE or entry.error is not None or entry.changed is not None:
            return entry
        fields = list(entry)
        try:
            fields[_DIGEST], fields[_CHANGED] = self._hash_file(entry)
        except _ReadError as err:
            fields[_ERROR] = (err.op, err.errno, err.offset)
        return Entry(fields)

    def _hash_file(self, entry: Entry) -> tuple[bytes | None, str | None]:
        fd = _open_below(self.root, entry.path)
        try:
            if not _same_inode(os.fstat(fd), entry):
                return None, "replaced"
            hasher = new_hasher(self.options.algorithm)
            buf = _thread_buffer()
            offset = 0
            while True:
                try:
                    n = os.preadv(fd, [buf], offset)
                except OSError as err:
                    raise _ReadError(_zvcore.OP_READ, err.errno or errno.EIO, offset) from None
                if n == 0:
                    break
                hasher.update(memoryview(buf)[:n])
                offset += n
                self._py_bytes += n
            if not _same_inode(os.fstat(fd), entry):
                return None, "modified"
            if offset != entry.size:  # the stat held still: a pseudo-file's made-up size
                return None, "size-mismatch"
            return hasher.digest(), None
        finally:
            os.close(fd)


_buffers = threading.local()


def _thread_buffer() -> bytearray:
    """One read buffer per pool thread: allocating 1 MiB per file cost more than hashing."""
    buf: bytearray | None = getattr(_buffers, "buf", None)
    if buf is None:
        buf = _buffers.buf = bytearray(PY_HASH_BLOCK)
    return buf


class _ReadError(Exception):
    def __init__(self, op: str, err: int, offset: int) -> None:
        super().__init__(op)
        self.op, self.errno, self.offset = op, err, offset


def _same_inode(st: os.stat_result, entry: Entry) -> bool:
    return (
        st.st_ino == entry.ino
        and st.st_dev == entry.dev
        and st.st_size == entry.size
        and st.st_mtime_ns == entry.mtime_ns
        and st.st_ctime_ns == entry.ctime_ns
    )


def _open_below(root: bytes, rel: bytes) -> int:
    """Open root/rel read-only without following a final symlink or touching atime.

    Short paths are opened whole (one syscall); the caller checks that the
    inode is the one the walk listed, which also catches a directory swapped
    for a symlink meanwhile.  Paths near PATH_MAX go one directory at a time.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    if len(root) + len(rel) < 3000:
        full = root + b"/" + rel
        try:
            try:
                return os.open(full, flags | os.O_NOATIME)
            except PermissionError:
                return os.open(full, flags)
        except OSError as err:
            raise _ReadError(_zvcore.OP_OPEN, err.errno or errno.EIO, -1) from None
    *dirs, name = rel.split(b"/")
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in dirs:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
        try:
            return os.open(name, flags | os.O_NOATIME, dir_fd=dir_fd)
        except PermissionError:
            return os.open(name, flags, dir_fd=dir_fd)
    except OSError as err:
        raise _ReadError(_zvcore.OP_OPEN, err.errno or errno.EIO, -1) from None
    finally:
        os.close(dir_fd)
