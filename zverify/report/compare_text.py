"""Human rendering of a CompareResult: one line per difference (written as found, by
TextStream), a summary, and the size table that explains why `du` differs."""

import os
from collections.abc import Callable

from zverify import exitcodes
from zverify.compare.diffs import Difference
from zverify.compare.policy import CODES, PROFILES
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
    total = result.total
    found = f"{total:,} difference{'s' * (total != 1)}"
    if total:
        found += f" ({', '.join(f'{k} {n:,}' for k, n in sorted(result.counts.items()))})"
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


def render_compare(result: CompareResult, verdict_only: bool = False) -> str:
    """The whole report of a result whose differences were collected."""
    out: list[str] = []
    stream = TextStream(out.append, verdict_only)
    for d in result.differences:
        stream.difference(d)
    stream.finish(result)
    return "".join(out)


class TextStream:
    """Difference lines as they are found, then the summary; verdict_only (-q): the verdict."""

    def __init__(self, write: Callable[[str], object], verdict_only: bool = False) -> None:
        self._write = write
        self._verdict_only = verdict_only
        self._shown = False

    def difference(self, d: Difference) -> None:
        if not self._verdict_only:
            self._write(difference_line(d) + "\n")
            self._shown = True

    def finish(self, result: CompareResult) -> None:
        if self._verdict_only:
            self._write(verdict_line(result) + "\n")
            return
        self._write("\n" * self._shown + "\n".join(summary_lines(result)) + "\n")

    def abort(self, message: str) -> None:
        """Nothing to add: the error goes to stderr, and no verdict line is printed."""
