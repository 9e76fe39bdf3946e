"""Walk one tree: a Python facade over the C walker.

TreeWalk turns options into a zverify._zvcore.Walker, flattens its batches into an
iterator of entries, and exposes counters for progress bars.  Every algorithm is hashed by
the C workers (C_ALGORITHMS covers hashing.Algorithm whole, which a test holds), so a walk
never hashes in Python and its records can always be joined in C (compare.joined).
"""

import os
import resource
from collections.abc import Iterator
from dataclasses import dataclass, field

from zverify import _zvcore
from zverify.entry import Entry
from zverify.errors import RootError, UsageError, WalkError
from zverify.filters import Filter
from zverify.hashing import Algorithm

# 128 KiB reads keep each block in L2 between the kernel's copy and the hash;
# 1 MiB blocks measured 2.5x slower on a hot page cache (bench/test_core.py).
READ_BLOCK = 128 << 10


# The C workers' name of every algorithm.
C_ALGORITHMS = {
    Algorithm.XXH3_128: _zvcore.ALGO_XXH3_128,
    Algorithm.BLAKE3: _zvcore.ALGO_BLAKE3,
    Algorithm.SHA256: _zvcore.ALGO_SHA256,
    Algorithm.SHA512: _zvcore.ALGO_SHA512,
    Algorithm.MD5: _zvcore.ALGO_MD5,
    Algorithm.SHA1: _zvcore.ALGO_SHA1,
}


MAX_THREADS = 256  # hashing threads per walk: --threads of compare and manifest


def default_threads() -> int:
    return max(1, min(os.cpu_count() or 1, 64))


def check_threads(threads: int | None) -> None:
    if threads is not None and not 1 <= threads <= MAX_THREADS:
        raise UsageError(f"--threads must be between 1 and {MAX_THREADS}")


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
        algo = C_ALGORITHMS[options.algorithm] if options.hash_content else _zvcore.ALGO_NONE
        max_files, max_dirs = fd_budget(options.threads)
        try:
            self._walker = _zvcore.Walker(
                self.root,
                algo=algo,
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

    def __iter__(self) -> Iterator[Entry]:
        for batch in self.batches():
            yield from batch

    def batches(self) -> Iterator[list[Entry]]:
        """The entries in the C core's batches, for consumers that work a list at a time."""
        try:
            yield from self._walker
        except _zvcore.WalkError as err:
            raise WalkError(self.side, os.fsdecode(self.root), err.strerror or str(err)) from None

    def c_walker(self) -> _zvcore.Walker:
        """The C walker, whose records may be consumed in C (compare.joined) instead of
        through this iterator."""
        return self._walker

    def progress(self) -> tuple[int, int]:
        """(entries produced, file bytes read) so far."""
        entries, nbytes, _ = self._walker.counters()
        return entries, nbytes

    def excluded(self) -> int:
        """Entries the filter left out (an excluded directory once)."""
        return self._walker.counters()[2]

    def close(self) -> None:
        self._walker.close()
