"""--detect-moves: a file only in SRC and a file only in DST with the same content are one
file moved (hashdeep's "moved"), reported once as `moved` instead of missing + extra.

Only exact pairs: the same recorded size and the same digest, both computed (a policy that
reads no content is refused before any walk: policy.py), and each file in at most one pair.
Where several missing and several extra files hold one content, they are paired in path
order (the first missing with the first extra, and so on) and the rest stay missing or
extra, so the same trees always give the same pairs.  Empty files are never paired: all of
them hold the same content, so a pair would say nothing about where a file went.  A file
inside a directory missing or extra as a whole is folded into it, as in the verdict, and
not paired.  A move is still a difference (exit 1): the trees are not the same.

Pairs are known only once both walks have ended, so the one-sided files wait here (memory
grows with their number, only under --detect-moves) and come out after the walk, in path
order, as hardlink differences do.
"""

from zverify.compare.diffs import Difference
from zverify.compare.policy import DiffKind
from zverify.entry import Entry, Kind
from zverify.pathnames import display, for_terminal

Content = tuple[int, bytes]  # (size, digest)


class MovePairing:
    def __init__(self) -> None:
        self._held: dict[Content, tuple[list[Difference], list[Difference]]] = {}

    def hold(self, diff: Difference, entry: Entry) -> bool:
        """Keep diff, the missing or extra difference of entry, for resolve(); False when
        entry cannot be paired (the caller reports diff now)."""
        if (
            entry.kind != Kind.FILE
            or entry.size <= 0  # empty, or no size recorded (a checkfile)
            or entry.digest is None
            or entry.error is not None
            or entry.changed is not None
        ):
            return False
        missing, extra = self._held.setdefault((entry.size, entry.digest), ([], []))
        (extra if diff.kind == DiffKind.EXTRA else missing).append(diff)
        return True

    def resolve(self) -> list[Difference]:
        """Every held difference, each missing/extra pair of one content as one `moved`, in
        path order."""
        out: list[Difference] = []
        for missing, extra in self._held.values():
            missing.sort(key=_path)
            extra.sort(key=_path)
            pairs = min(len(missing), len(extra))
            out += [_moved(m, e) for m, e in zip(missing, extra, strict=False)]
            out += missing[pairs:] + extra[pairs:]
        self._held.clear()
        return sorted(out, key=_path)


def _path(d: Difference) -> bytes:
    return d.path


def _moved(missing: Difference, extra: Difference) -> Difference:
    (src, src_escaped), (dst, dst_escaped) = display(missing.path), display(extra.path)
    return Difference(
        missing.path,
        DiffKind.MOVED,
        f"-> '{for_terminal(extra.path)}' (same size and digest)",
        src,
        dst,
        src_escaped=src_escaped,
        dst_escaped=dst_escaped,
        moved_to=extra.path,
    )
