"""Progress on stderr with tqdm, only for a human watching a terminal.

Off with --quiet, with --json, and whenever stderr is not a TTY, so scripts
and logs see nothing but results and diagnostics.
"""

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


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
