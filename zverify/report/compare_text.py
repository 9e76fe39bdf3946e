"""Human rendering of a CompareResult, the answer first: whether SRC holds data DST lacks
(AT RISK, each such difference a line) or not (metadata only, the differences of one kind
folded into a line), then the summary and the size table that explains why `du` differs.
With every line (-v), each difference is written as it is found, the answer after them."""

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from zverify import exitcodes
from zverify.compare.diffs import Difference
from zverify.compare.policy import AT_RISK, CODES, PROFILES
from zverify.compare.result import CompareResult
from zverify.compare.sizes import COMPONENTS, SideTally
from zverify.fsinfo import FsInfo
from zverify.pathnames import for_terminal, shown_paths


def difference_line(d: Difference) -> str:
    path = for_terminal(d.path) or "."
    detail = d.detail
    if d.entries_below:
        detail += f" (+{d.entries_below} entries below)"
    if d.members:
        detail += ": " + ", ".join(for_terminal(m) for m in d.members)
    return f"{CODES[d.kind]} {d.kind.value:<8} {path}  {detail}"


def _num(n: int, signed: bool = False) -> str:
    return f"{n:+,}" if signed else f"{n:,}"


def _side_line(label: str, root: str, tally: SideTally, fs: FsInfo) -> str:
    kinds = ", ".join(f"{k} {n:,}" for k, n in sorted(tally.counts.items()))
    where = f"{fs.fstype} {fs.source}"
    if fs.zfs:
        props = ", ".join(f"{k}={v}" for k, v in fs.zfs.items() if k != "dataset")
        where += f" ({props})"
    shown = for_terminal(os.fsencode(root))  # a root that is not UTF-8 must not crash stdout
    return f"{label} {shown}: {sum(tally.counts.values()):,} entries ({kinds}) on {where}"


def _verdict(result: CompareResult) -> str:
    if result.unlisted:
        n = len(result.unlisted)
        return (
            f"INCOMPLETE: {n:,} --files-from path{'s' * (n != 1)} listed but in neither tree "
            f"({shown_paths(result.unlisted)}); {_found(result)}{_narrowed(result)}"
        )
    if result.identical:
        return f"IDENTICAL under {_checks(result)}{_narrowed(result)}"
    word = "INCOMPLETE" if result.exit_code == exitcodes.TROUBLE else "DIFFERENT"
    found = _kinds(result.counts) if result.total else "0 differences"
    return f"{word}: {found}{_unverifiable(result)}{_narrowed(result)}"


def _found(result: CompareResult) -> str:
    """The rest of the verdict after the listed paths that were not found."""
    total = result.total
    if not total:
        return "no other difference"
    return f"{total:,} difference{'s' * (total != 1)} among the rest"


def _narrowed(result: CompareResult) -> str:
    """What the verdict does not cover: content not read, entries filtered out."""
    parts = []
    if not result.policy.reads_content:
        parts.append("content not read: equal sizes taken as equal content")
    if result.filter.active:
        src, dst = result.excluded.get("src", 0), result.excluded.get("dst", 0)
        parts.append(f"filtered: {src:,} SRC and {dst:,} DST entries left out")
    return f" ({'; '.join(parts)})" if parts else ""


def filter_line(result: CompareResult) -> list[str]:
    """The filter in full, so a log shows exactly what was not compared."""
    f = result.filter
    if not f.active:
        return []
    rules = ", ".join(f.patterns())
    listed = "" if f.listed is None else f"--files-from {f.listed_from!r} ({len(f.listed):,} paths)"
    what = "; ".join(x for x in (rules, listed) if x)
    return [
        f"filter: {what} (an excluded directory counts once: it is not entered; the sizes "
        "below are of the entries compared)"
    ]


def _unverifiable(result: CompareResult) -> str:
    if not result.unverifiable:
        return ""
    hidden = ", ".join(result.unverifiable)
    return (
        f" ({hidden} not readable by this process: not compared under {_checks(result)}; "
        "run as root, or narrow the check with --ignore xattr)"
    )


def _checks(result: CompareResult) -> str:
    """'profile full', or 'profile full minus content, mtime' after --ignore."""
    ignored = sorted(k.value for k in PROFILES[result.policy.profile] - result.policy.checked)
    minus = f" minus {', '.join(ignored)}" if ignored else ""
    return f"profile {result.policy.profile}{minus}"


def size_table(result: CompareResult) -> list[str]:
    s, d = result.src_sizes, result.dst_sizes
    rows = [
        ("du -B1", s.du_bytes, d.du_bytes),
        ("du --apparent-size", s.du_apparent_bytes, d.du_apparent_bytes),
        ("per-path sum (allocated)", s.naive_bytes, d.naive_bytes),
        ("per-path sum (apparent)", s.naive_apparent_bytes, d.naive_apparent_bytes),
    ]
    lines = [f"{'':<26}{'SRC':>18}{'DST':>18}{'DST-SRC':>18}"]
    lines += [f"{n:<26}{_num(a):>18}{_num(b):>18}{_num(b - a, True):>18}" for n, a, b in rows]
    lines += ["", f"{'why du differs (DST-SRC)':<44}{'apparent':>18}{'allocated':>18}"]
    ex = result.explanation
    for name, label in COMPONENTS.items():
        if ex.apparent[name] or ex.allocated[name]:
            app, alloc = _num(ex.apparent[name], True), _num(ex.allocated[name], True)
            lines.append(f"  {label:<42}{app:>18}{alloc:>18}")
    total_app = d.du_apparent_bytes - s.du_apparent_bytes
    total_alloc = d.du_bytes - s.du_bytes
    lines.append(f"  {'total':<42}{_num(total_app, True):>18}{_num(total_alloc, True):>18}")
    return lines


def verdict_line(result: CompareResult) -> str:
    return f"{_verdict(result)}  [{_checks(result)}, {result.algorithm.value}]"


def summary_lines(result: CompareResult) -> list[str]:
    return [
        *[f"note: {note}" for note in result.notes],
        *filter_line(result),
        _side_line("SRC", result.src_root, result.src_sizes, result.src_fs),
        _side_line("DST", result.dst_root, result.dst_sizes, result.dst_fs),
        verdict_line(result),
        "",
        *size_table(result),
    ]


def answer_line(result: CompareResult) -> str:
    """May SRC be deleted?  No when DST lacks data of SRC or something was not compared;
    otherwise what differs is metadata, or only in DST, and the line says so."""
    counts = {k: n for k, n in result.counts.items() if n}
    risky = {k: n for k, n in counts.items() if k in AT_RISK}
    rest = {k: n for k, n in counts.items() if k not in AT_RISK}
    others = f"; besides, {_kinds(rest)} not at risk" if rest else ""
    if risky:
        return f"AT RISK: {_kinds(risky)}: DST lacks data of SRC; do not delete SRC{others}"
    if result.exit_code == exitcodes.TROUBLE:
        return "AT RISK: not everything was compared (see the verdict); do not delete SRC"
    held = "its content" if result.policy.reads_content else "its size (content not read)"
    return (
        f"NO DATA AT RISK: every entry of SRC is in DST with {held}; what differs: {_kinds(rest)}"
    )


def _kinds(counts: dict[str, int]) -> str:
    total = sum(counts.values())
    each = ", ".join(f"{k} {n:,}" for k, n in sorted(counts.items()))
    return f"{total:,} difference{'s' * (total != 1)} ({each})"


FOLDED = 3  # this many differences of one kind that put no data at risk are one line


@dataclass
class _Run:
    """The differences of one kind, in the order found (a walk's order): the first and the
    last path name their span."""

    kind: str
    first: list[Difference] = field(default_factory=list)  # up to FOLDED of them
    last: Difference | None = None
    count: int = 0
    details: Counter[str] = field(default_factory=Counter)

    def lines(self) -> list[str]:
        if self.count < FOLDED:
            return [difference_line(d) for d in self.first]
        assert self.last is not None
        first, last = (for_terminal(d.path) or "." for d in (self.first[0], self.last))
        if len(self.details) == 1:
            how = next(iter(self.details))
        else:
            how = f"{len(self.details):,} different details (-v lists each)"
        span = f"{self.count:,} entries from {first} to {last}"
        return [f"{CODES[self.first[0].kind]} {self.kind:<8} {span}: {how}"]


class TextStream:
    """The answer first (verdict_only, -q: the verdict alone).  every_line (-v): difference
    lines as they are found, the answer after them; otherwise the differences that put data
    at risk are held (each is a line) and the others folded by kind until the end."""

    def __init__(
        self,
        write: Callable[[str], object],
        verdict_only: bool = False,
        every_line: bool = False,
    ) -> None:
        self._write = write
        self._verdict_only = verdict_only
        self._every_line = every_line
        self._shown = False
        self._at_risk: list[Difference] = []
        self._runs: dict[str, _Run] = {}  # by kind, in the order first found

    def difference(self, d: Difference) -> None:
        if self._verdict_only:
            return
        if self._every_line:
            self._write(difference_line(d) + "\n")
            self._shown = True
        elif d.kind in AT_RISK:
            self._at_risk.append(d)
        else:
            self._fold(d)

    def _fold(self, d: Difference) -> None:
        run = self._runs.get(d.kind.value)
        if run is None:
            run = self._runs[d.kind.value] = _Run(d.kind.value)
        if len(run.first) < FOLDED:
            run.first.append(d)
        run.last = d
        run.count += 1
        run.details[d.detail] += 1

    def finish(self, result: CompareResult) -> None:
        if self._verdict_only:
            self._write(verdict_line(result) + "\n")
            return
        answer = [answer_line(result)] if not result.identical else []
        if self._every_line:
            lines = [*[""] * self._shown, *answer, *summary_lines(result)]
        else:
            held = self._held()
            lines = [*answer, *held, *[""] * bool(held), *summary_lines(result)]
        self._write("\n".join(lines) + "\n")

    def _held(self) -> list[str]:
        at_risk = [difference_line(d) for d in self._at_risk]
        return at_risk + [line for run in self._runs.values() for line in run.lines()]

    def abort(self, message: str) -> None:
        """What was found before the run failed, as found so far; the error goes to stderr,
        and no verdict line is printed."""
        if not self._verdict_only and not self._every_line and (held := self._held()):
            self._write("\n".join(held) + "\n")


def render_compare(result: CompareResult, verdict_only: bool = False) -> str:
    """The whole report of a result whose differences were collected."""
    out: list[str] = []
    stream = TextStream(out.append, verdict_only)
    for d in result.differences:
        stream.difference(d)
    stream.finish(result)
    return "".join(out)
