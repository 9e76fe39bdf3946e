"""Rank 0: plan the key ranges, hand them out, and feed the engine in canonical order.

The engine (compare.engine.compare_pair_batches) is the single-node one, fed exactly what a
single-node C join would hand it: the pairs of range 0, then of range 1, and so on, and at
the end the sum of every range's settled totals.  Ranges are handed out heaviest first
(a rank that draws a huge file starts on it early) and may finish in any order; the pairs
of a range that finished ahead of its turn wait here.  In a good copy they are few (only
differences, one-sided and hard-linked entries travel), so rank 0 holds what a single-node
run holds, never the tree.  Hard-linked entries arrive with a node-independent st_dev
(mpi.devices), so groups and du's count-once rule are global, not per rank.
"""

import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from zverify import _zvcore
from zverify.compare.engine import DifferenceSink, EngineResult, compare_pair_batches
from zverify.compare.march import Pair
from zverify.compare.policy import ComparePolicy
from zverify.compare.sides import SIDES, Side
from zverify.compare.sizes import Settled
from zverify.errors import ZverifyError
from zverify.mpi.devices import root_identity
from zverify.mpi.plan import KeyRange, plan
from zverify.mpi.session import RELEASED, TAG_JOB, TAG_RANGE, TAG_REQUEST, TAG_RESULT, Session
from zverify.mpi.worker import Job
from zverify.walk import WalkOptions


class RankFailed(ZverifyError):
    """Another rank could not walk its range: its message, as a single-node run says it."""


def compare_distributed(
    session: Session,
    s: Side,
    d: Side,
    options: WalkOptions,
    threads: int | None,
    policy: ComparePolicy,
    sink: DifferenceSink | None,
) -> EngineResult:
    """The single-node engine over both live trees, walked by ranks 1..N-1."""
    job = Job(
        s.label, d.label, options.algorithm, threads, options.hash_content, options.xattrs,
        options.one_file_system, options.filter.rules, options.filter.listed,
    )  # fmt: skip
    ranges = plan(os.fsencode(s.label), session.size - 1)
    feed = _Feed(session, ranges, [s.label, d.label], options.filter.compiled())
    for worker in range(1, session.size):
        session.comm.send(job, dest=worker, tag=TAG_JOB)
    result = compare_pair_batches(feed.batches(), feed.settled, policy, sink=sink)
    s.excluded = lambda: feed.excluded[0]
    d.excluded = lambda: feed.excluded[1]
    return result


@dataclass
class _Range:
    spec: KeyRange
    batches: deque[list[Pair]] = field(default_factory=deque)
    settled: Settled | None = None  # set when the range is done


def same_roots(
    mine: list[tuple[str, str, tuple[int, int]]], theirs: list[tuple[int, int]] | str, rank: int
) -> None:
    """Refuse a rank that sees another tree under a root's name (a node-local directory of
    the same path, another mount), or none: its share would be another tree's entries."""
    if isinstance(theirs, str):
        raise RankFailed(f"MPI rank {rank} cannot open a root: {theirs}; nothing was verified")
    for (side, path, identity), seen in zip(mine, theirs, strict=True):
        if tuple(seen) != identity:
            raise RankFailed(
                f"MPI rank {rank} sees another {side} {path!r} than rank 0 (another filesystem "
                "or directory under that name); nothing was verified"
            )


class _Feed:
    def __init__(
        self,
        session: Session,
        ranges: list[KeyRange],
        roots: list[str],
        compiled: _zvcore.Filter | None,
    ) -> None:
        self.session = session
        self.compiled = compiled  # rank 0's filter, told which listed paths the ranks met
        self.roots = [
            (name, path, root_identity(path)) for name, path in zip(SIDES, roots, strict=True)
        ]
        self.ranges = [_Range(r) for r in ranges]
        heaviest_first = sorted(range(len(ranges)), key=lambda i: (-ranges[i].weight, i))
        self.to_hand_out = iter(heaviest_first)
        self.released = 0  # ranks that were told there is nothing more, and said so
        self.excluded = [0, 0]
        self.totals: list[Settled] = []

    def batches(self) -> Iterator[list[Pair]]:
        """Every range's pairs in key order, received from whichever rank walked it."""
        for current in self.ranges:
            while True:
                while current.batches:
                    yield current.batches.popleft()
                if current.settled is not None:
                    break
                self._receive()
            self.totals.append(current.settled)
        while self.released < self.session.size - 1:
            self._receive()  # the ranks still asking for work are told to stop
        self.session.released = True

    def settled(self) -> Settled:
        return Settled.add_up(self.totals)

    def _receive(self) -> None:
        payload, source, tag = self.session.receive()
        if tag == TAG_REQUEST and payload == RELEASED:
            self.released += 1
        elif tag == TAG_REQUEST:
            if payload is not None:
                same_roots(self.roots, payload[1], source)
            self._hand_out(source)
        elif tag == TAG_RESULT:
            self._result(*payload)

    def _hand_out(self, rank: int) -> None:
        index = next(self.to_hand_out, None)
        if index is None:
            self.session.comm.send(None, dest=rank, tag=TAG_RANGE)
            return
        spec = self.ranges[index].spec
        self.session.comm.send((index, spec.lo, spec.hi), dest=rank, tag=TAG_RANGE)

    def _result(self, what: str, index: int, *rest: Any) -> None:
        state = self.ranges[index]
        if what == "pairs":
            (batch,) = rest
            state.batches.append(batch)
        elif what == "done":
            state.settled, excluded, seen = rest
            self.excluded = [a + b for a, b in zip(self.excluded, excluded, strict=True)]
            for path in seen:
                if self.compiled is not None:
                    self.compiled.note_seen(path)
        else:
            raise RankFailed(str(rest[0]))
