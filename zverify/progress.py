"""Progress on stderr with tqdm, only for a human watching a terminal.

Off with --quiet, with --json, and whenever stderr is not a TTY, so scripts
and logs see nothing but results and diagnostics.
"""

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zverify.fsinfo import Estimate


def wanted(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


@contextmanager
def entry_progress(enabled: bool, desc: str) -> Iterator[Callable[[int, int], None] | None]:
    """Yields a hook(entries, bytes) that updates one bar, or None if disabled."""
    if not enabled:
        yield None
        return
    from tqdm import tqdm  # only when a bar is drawn: scripts never pay for importing it

    bar = tqdm(desc=desc, unit=" entries", file=sys.stderr, leave=False, dynamic_ncols=True)

    def hook(entries: int, nbytes: int) -> None:
        bar.update(entries - bar.n)
        bar.set_postfix_str(f"{nbytes / 1e6:,.0f} MB read", refresh=False)

    try:
        yield hook
    finally:
        bar.close()


@contextmanager
def byte_progress(enabled: bool, name: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """Yields a hook(bytes_read) driving one bar on stderr, or a no-op."""
    if not enabled:
        yield lambda _n: None
        return
    from tqdm import tqdm

    bar = tqdm(desc=name, total=total, unit="B", unit_scale=True, file=sys.stderr, leave=False)

    def hook(nbytes: int) -> None:
        bar.update(nbytes - bar.n)

    try:
        yield hook
    finally:
        bar.close()


Counters = tuple[int, int]  # (entries, bytes read) of one side so far
CompareHook = Callable[[Counters, Counters], None]  # (SRC, DST)


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
    from tqdm import tqdm

    by_bytes = reads_content
    total = None if estimate is None else estimate.bytes if by_bytes else estimate.entries
    b = "B" if by_bytes else ""  # entries go bare: "SRC ... entries" is on the line anyway
    # {desc} carries the per-side counts: tqdm's {postfix} would start with ", "
    if total:
        fmt = f"comparing {{percentage:3.0f}}% {{n_fmt}}{b}/{{total_fmt}}{b}  {{rate_fmt}}  "
        fmt += "ETA {remaining}  {desc}"
    else:
        fmt = f"comparing {{n_fmt}}{b} {'read' if by_bytes else 'entries'}  {{rate_fmt}}  "
        fmt += "{elapsed} elapsed  {desc}"
    bar = tqdm(
        total=total or None,
        unit="B" if by_bytes else " entries",
        unit_scale=True,
        unit_divisor=1000,  # MB/s as disks and rsync --info=progress2 count them
        bar_format=fmt,
        file=sys.stderr,
        leave=False,
        dynamic_ncols=True,
    )
    entries_total = estimate.entries if estimate is not None else None

    def hook(src: Counters, dst: Counters) -> None:
        counted = src[1] if by_bytes else src[0]
        if bar.total is not None and counted > bar.total:
            bar.total = counted  # the estimate was low (compression, other mounts below)
        of = f"/{_scaled(entries_total)}" if entries_total and src[0] <= entries_total else ""
        bar.set_description_str(f"SRC {src[0]:,}{of} entries, DST {dst[0]:,}", refresh=False)
        bar.update(counted - bar.n)

    try:
        yield hook
    finally:
        bar.close()


def _scaled(n: int) -> str:
    for limit, suffix in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if n >= limit:
            return f"{n / limit:.1f}{suffix}"
    return str(n)
