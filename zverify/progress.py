"""Progress on stderr with tqdm, only for a human watching a terminal: one line, the same
for every command (compare, cutover, manifest, stream, cold), built by _line().

Off with --quiet, with --json, and whenever stderr is not a TTY, so scripts
and logs see nothing but results and diagnostics.
"""

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from tqdm import tqdm

    from zverify.fsinfo import Estimate


def wanted(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


@contextmanager
def byte_progress(enabled: bool, name: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """Yields a hook(bytes_read) drawing the line for one file or stream, or a no-op:

        tank@1.zfs  38% 12.1GB/31.9GB  310MB/s  ETA 01:04

    Without a total (a pipe), the bytes read, the rate and the time spent."""
    if not enabled:
        yield lambda _n: None
        return
    bar = _line(name, total, by_bytes=True)

    def hook(nbytes: int) -> None:
        _count(bar, nbytes)

    try:
        yield hook
    finally:
        bar.close()


Counters = tuple[int, int]  # (entries, bytes read) of one side so far
CompareHook = Callable[[Counters, Counters], None]  # (SRC, DST)


@contextmanager
def tree_progress(
    enabled: bool, verb: str, estimate: "Estimate | None" = None
) -> Iterator[Callable[[int, int], None] | None]:
    """Yields hook(entries, bytes) drawing compare's line for one tree being read, or None:

        recording  38% 12.1GB/31.9GB  310MB/s  ETA 01:04  402,113/1.1M entries

    The total is estimate's (estimate_tree: at a filesystem's root), as in compare."""
    if not enabled:
        yield None
        return
    bar = _line(verb, None if estimate is None else estimate.bytes, by_bytes=True)
    of = _of(estimate)

    def hook(entries: int, nbytes: int) -> None:
        bar.set_description_str(f"{entries:,}{of(entries)} entries", refresh=False)
        _count(bar, nbytes)  # draws the line, with the description just set

    try:
        yield hook
    finally:
        bar.close()


@contextmanager
def compare_progress(
    enabled: bool, estimate: "Estimate | None" = None, reads_content: bool = True
) -> Iterator[CompareHook | None]:
    """Yields hook(src, dst) drawing one line on stderr, or None if disabled:

        comparing  38% 12.1GB/31.9GB  310MB/s  ETA 01:04  SRC 402,113/1.1M entries, DST 402,090

    The total is SRC's (estimate_tree): bytes when content is read, else entries; without
    one the line shows what was done, the rate and the time spent."""
    if not enabled:
        yield None
        return
    by_bytes = reads_content
    total = None if estimate is None else estimate.bytes if by_bytes else estimate.entries
    bar = _line("comparing", total, by_bytes)
    of = _of(estimate)

    def hook(src: Counters, dst: Counters) -> None:
        bar.set_description_str(
            f"SRC {src[0]:,}{of(src[0])} entries, DST {dst[0]:,}", refresh=False
        )
        _count(bar, src[1] if by_bytes else src[0])

    try:
        yield hook
    finally:
        bar.close()


def _line(verb: str, total: int | None, by_bytes: bool) -> "tqdm[NoReturn]":
    """The one progress line of every command: verb, then (with a total) percentage,
    done/total, rate and ETA, else done, rate and time spent; then {desc}, the counts the
    caller sets.  Units scaled by 1000, as disks and rsync --info=progress2 count them."""
    from tqdm import tqdm  # only when a bar is drawn: scripts never pay for importing it

    b = "B" if by_bytes else ""  # entries go bare: "... entries" is on the line anyway
    verb = verb.replace("{", "{{").replace("}", "}}")  # a file name, literal in the format
    # {desc} carries the counts: tqdm's {postfix} would start with ", "
    if total:
        fmt = f"{verb} {{percentage:3.0f}}% {{n_fmt}}{b}/{{total_fmt}}{b}  {{rate_fmt}}  "
        fmt += "ETA {remaining}  {desc}"
    else:
        fmt = f"{verb} {{n_fmt}}{b} {'read' if by_bytes else 'entries'}  {{rate_fmt}}  "
        fmt += "{elapsed} elapsed  {desc}"
    width = _fixed_width()
    return tqdm(
        total=total or None,
        unit="B" if by_bytes else " entries",
        unit_scale=True,
        unit_divisor=1000,
        bar_format=fmt,
        file=sys.stderr,
        leave=False,
        dynamic_ncols=width is None,
        ncols=width,
    )


def _fixed_width() -> int | None:
    """None: follow the terminal's width as it is resized.  80 when it reports no width (a
    serial console, a pseudo-terminal nobody sized): there tqdm would draw nothing at all."""
    try:
        columns = os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError):
        columns = 0
    return None if columns else 80


def _count(bar: "tqdm[NoReturn]", done: int) -> None:
    if bar.total is not None and done > bar.total:
        bar.total = done  # the estimate was low (compression, other mounts below)
    bar.update(done - bar.n)


def _of(estimate: "Estimate | None") -> Callable[[int], str]:
    """'/1.1M' after an entry count while the estimate holds, else nothing."""
    total = estimate.entries if estimate is not None else None
    return lambda n: f"/{_scaled(total)}" if total and n <= total else ""


def _scaled(n: int) -> str:
    for limit, suffix in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if n >= limit:
            return f"{n / limit:.1f}{suffix}"
    return str(n)
