"""Ranks 1..N-1: walk the key ranges rank 0 hands out, and send back what it must judge.

Each range is walked on both trees by the same C core as a single-node compare (threads
and all) and merge-joined in C; identical pairs are settled into totals here, and only the
pairs the engine must see (differences, one-sided entries, hard-linked entries, anything
below a directory it may fold) travel to rank 0, followed by the range's totals.  Nothing
here prints: a failure travels to rank 0 as its message, and rank 0 ends the job.
"""

import signal
from dataclasses import dataclass

from zverify.compare.joined import JoinedWalks
from zverify.compare.march import OrderError, Pair
from zverify.errors import ZverifyError
from zverify.filters import Filter
from zverify.hashing import Algorithm
from zverify.mpi.devices import globalized, root_identity
from zverify.mpi.session import (
    RELEASED,
    ROOTS,
    TAG_JOB,
    TAG_RANGE,
    TAG_REQUEST,
    TAG_RESULT,
    Session,
    await_end,
)
from zverify.walk import TreeWalk, WalkOptions, default_threads


@dataclass(frozen=True)
class Job:
    """What every rank walks, as rank 0 settled it (a Filter travels as its fields)."""

    src: str
    dst: str
    algorithm: Algorithm
    threads: int | None  # None: this node's cores
    hash_content: bool
    xattrs: bool
    one_file_system: bool
    rules: tuple[tuple[str, bytes], ...]
    listed: tuple[bytes, ...] | None

    def options(self, lo: bytes, hi: bytes | None) -> WalkOptions:
        return WalkOptions(
            algorithm=self.algorithm,
            threads=self.threads or default_threads(),
            hash_content=self.hash_content,
            xattrs=self.xattrs,
            one_file_system=self.one_file_system,
            filter=Filter(self.rules, self.listed),
            key_range=(lo, hi),
        )


def serve(session: Session) -> int:
    """Walk ranges until rank 0 says stop; 0 then (a failure ends the job from rank 0)."""
    job, _, _ = session.receive(0, TAG_JOB)
    greeting: object = (ROOTS, _roots(job))  # the first request says what this rank sees
    while True:
        session.comm.send(greeting, dest=0, tag=TAG_REQUEST)
        greeting = None
        item, _, _ = session.receive(0, TAG_RANGE)
        if item is None:
            _released(session)
            await_end(session)
            return 0
        index, lo, hi = item
        _walk_range(session, job, index, lo, hi)


def _roots(job: Job) -> list[tuple[int, int]] | str:
    """Both roots as this rank sees them (devices.root_identity), or why it cannot."""
    try:
        return [root_identity(job.src), root_identity(job.dst)]
    except OSError as err:
        return f"{err.filename}: {err.strerror}"


def _released(session: Session) -> None:
    """Nothing more to do, and rank 0 is told so: from then on it may end the job at any
    moment, and a signal that ends this rank needs no word from it."""
    session.released = True
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    session.comm.send(RELEASED, dest=0, tag=TAG_REQUEST)


def _walk_range(session: Session, job: Job, index: int, lo: bytes, hi: bytes | None) -> None:
    def send(*message: object) -> None:
        session.comm.send((message[0], index, *message[1:]), dest=0, tag=TAG_RESULT)

    options = job.options(lo, hi)
    walks: list[TreeWalk] = []
    try:
        for root, side in ((job.src, "SRC"), (job.dst, "DST")):
            walks.append(TreeWalk(root, options, side))
        # files are compared by size where content is not read, as compare_trees does
        joined = JoinedWalks(walks[0], walks[1], sizes_only=not job.hash_content)
        for batch in joined.batches():
            if batch:
                send("pairs", [_global(pair) for pair in batch])
        compiled = options.filter.compiled()  # the --files-from paths this range met
        seen = compiled.seen() if compiled is not None and job.listed is not None else []
        send("done", joined.settled(), [w.excluded() for w in walks], seen)
    except (ZverifyError, OrderError) as err:
        send("failed", str(err))
    finally:
        for walk in walks:
            walk.close()


def _global(pair: Pair) -> Pair:
    s, d = pair
    return (globalized(s) if s else None, globalized(d) if d else None)
