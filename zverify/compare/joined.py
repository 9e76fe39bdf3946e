"""Two live walks merge-joined in the C core (native/src/zv_join.c): compare's fast path.

In a good copy nearly every pair is identical, and judging each in Python cost ~5 µs on the
main thread.  The C join settles those pairs itself (their sizes go into totals for the du
reconciliation) and hands up only the pairs the engine must judge: differences, one-sided
entries, hard-linked entries, and everything below a directory the engine may fold.  The
engine then runs exactly as it does on two entry streams (engine.compare_pair_batches).
compare_trees() uses it when both sides are live trees hashed entirely in C; the Python
merge (march.py) remains the reference, and tests/compare/test_join.py holds one to the other.
"""

import os
from collections.abc import Iterator

from zverify import _zvcore
from zverify.compare.march import OrderError, Pair
from zverify.compare.sizes import Settled
from zverify.errors import WalkError
from zverify.walk import TreeWalk


class JoinedWalks:
    def __init__(self, src: TreeWalk, dst: TreeWalk, sizes_only: bool = False) -> None:
        self._walks = {"SRC": src, "DST": dst}
        self._join = _zvcore.Join(src.c_walker(), dst.c_walker(), sizes_only=sizes_only)

    def batches(self) -> Iterator[list[Pair]]:
        """Lists of (src, dst) pairs for the engine, one side None when only the other has
        the path; raises WalkError (naming the side) when a walk could not finish."""
        try:
            yield from self._join
        except _zvcore.WalkError as err:
            walk = self._walks[getattr(err, "side", "SRC")]
            root = os.fsdecode(walk.root)
            raise WalkError(walk.side, root, err.strerror or str(err)) from None
        except RuntimeError as err:  # out of canonical order: a bug, never a verdict
            raise OrderError(str(err)) from None

    def settled(self) -> Settled:
        src, dst, components, pairs = self._join.totals()
        return Settled(src, dst, components, pairs)
