"""The "producer" object every JSON document carries: which zverify wrote it, on which host,
and when the command started and finished, so that a report kept for months (or collected
from many hosts) still says where it came from.  Built here only; the renderers put it
under KEY.  The schemas describe it as $defs/producer (zverify/schemas/).
"""

import os
import time

from zverify import __version__

KEY = "producer"
TOOL = "zverify"

# When the command started: set by the CLI as it starts each run (zverify.cli.run), so a
# library caller that never calls start() gets the time this module was first imported.
_started = time.time()


def start() -> None:
    global _started
    _started = time.time()


def timestamp(seconds: float) -> str:
    """RFC 3339 in UTC with milliseconds: sorts as text, and says "Z" rather than +00:00."""
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{whole}.{int(seconds % 1 * 1000):03d}Z"


def producer(finished: bool = True) -> dict[str, str]:
    """The object, stamped "finished" now; without it for the first line of a stream whose
    end is not known yet (compare --jsonl's header)."""
    doc = {
        "tool": TOOL,
        "version": __version__,
        # gethostname(2) on Linux is uname's nodename: the same name without importing
        # socket, which cost every run ~1.5 ms of start-up (the CLI loads this module first)
        "host": os.uname().nodename,
        "started": timestamp(_started),
    }
    if finished:
        doc["finished"] = timestamp(max(time.time(), _started))  # never before "started"
    return doc
