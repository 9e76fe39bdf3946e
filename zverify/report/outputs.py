"""Where one comparison is reported: one rendering on stdout, and the list files if asked.

The engine hands each difference to Outputs.difference() as it finds it; finish() writes
the summary, abort() ends a document a failed run had begun (see compare_json.py).
"""

import contextlib
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from zverify.compare.diffs import Difference
from zverify.compare.result import CompareResult

if TYPE_CHECKING:  # made by the CLI only with --write-lists: a plain run never loads it
    from zverify.report.lists import ListFiles

FLUSH_EVERY = 1.0  # seconds: a pipe (| tee log) sees differences while the run goes on


def stdout_writer(bar_shown: bool) -> Callable[[str], object]:
    """How a report reaches stdout: flushed at least every FLUSH_EVERY seconds, and past the
    progress bar when both share a terminal."""
    if bar_shown and sys.stdout.isatty():
        from tqdm import tqdm

        return lambda text: tqdm.write(text, file=sys.stdout, end="")
    flushed = time.monotonic()

    def write(text: str) -> None:
        nonlocal flushed
        sys.stdout.write(text)
        if time.monotonic() - flushed >= FLUSH_EVERY:
            sys.stdout.flush()
            flushed = time.monotonic()

    return write


class Rendering(Protocol):
    def difference(self, d: Difference) -> None: ...
    def finish(self, result: CompareResult) -> None: ...
    def abort(self, message: str) -> None: ...


class Outputs:
    def __init__(self, rendering: Rendering, lists: "ListFiles | None" = None) -> None:
        self._rendering = rendering
        self._lists = lists

    def difference(self, d: Difference) -> None:
        self._rendering.difference(d)
        if self._lists is not None:
            self._lists.difference(d)

    def finish(self, result: CompareResult) -> None:
        if self._lists is not None:
            self._lists.close()
        self._rendering.finish(result)

    def abort(self, message: str) -> None:
        if self._lists is not None:
            with contextlib.suppress(OSError):  # the run's own error is the one to report
                self._lists.close()
        self._rendering.abort(message)
