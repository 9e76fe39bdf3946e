"""What a pool says about itself: its history (`zpool history -il`) and its last scan
(`zpool status -p`).  Every reader raises ZfsError when zpool fails."""

import re
from dataclasses import dataclass

from zverify.zfs import command

# 2026-11-28.21:00:01 zfs receive -F data/x [user 0 (root) on vm:linux]
# 2026-11-28.21:00:01 [txg:15] scan setup func=1 mintxg=0 maxtxg=15 [on vm]
_LINE = re.compile(r"^(\d{4}-\d\d-\d\d\.\d\d:\d\d:\d\d) (\[txg:\d+\] )?(.*?)( \[(user|on) .*\])?$")


@dataclass(frozen=True)
class Event:
    """One line of `zpool history -il`: when (as printed: local time, sortable), whether
    OpenZFS logged it itself (-i), and what."""

    when: str
    internal: bool
    text: str


def history(pool: str) -> list[Event]:
    """Every event of the pool's history, oldest first."""
    out = command.run_zpool("history", "-il", pool)
    events = []
    for line in out.splitlines():
        match = _LINE.match(line.strip())
        if match:
            events.append(Event(match.group(1), match.group(2) is not None, match.group(3)))
    return events


def scan_line(pool: str) -> str:
    """The `scan:` line of `zpool status -p` (e.g. "scrub repaired 0B in 00:00:01 with 0
    errors on ..."), '' when the pool shows none."""
    out = command.run_zpool("status", "-p", pool)
    for line in out.splitlines():
        head, sep, rest = line.strip().partition(":")
        if sep and head == "scan":
            return rest.strip()
    return ""
