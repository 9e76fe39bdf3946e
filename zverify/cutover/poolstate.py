"""Was the new pool verified after the copy?  A receive writes checksummed blocks, but only a
scrub reads them back; `zpool remove` copies without checking checksums and starts no scrub,
and a sequential resilver (`replace -s`, `attach -s`) verifies nothing until the scrub it
starts has finished.  So DST's pool must show a scrub that started after
the last receive into DST and finished with 0 errors.  Pure: the history and the scan line
were read by gather.py."""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from zverify.cutover.findings import Finding, Severity, listed
from zverify.zfs.pool import Event

KIND = "unverified-copy"
# Operations that move or rebuild data without checking it (named when seen since the last
# clean scrub).
RISKY = re.compile(r"^zpool (remove|replace -s|replace .* -s|attach)\b")


@dataclass(frozen=True)
class Scrub:
    started: str  # as `zpool history` prints it
    errors: int | None  # None: still running, or cancelled


def scrubs(events: Sequence[Event]) -> list[Scrub]:
    """The scrubs of the history, oldest first: `scan setup func=1` (a scrub; 2 is a
    resilver) and its `scan done errors=N`; a scan cancelled or restarted has no errors."""
    found: list[Scrub] = []
    pending: str | None = None
    for e in events:
        if not e.internal:
            continue
        if e.text.startswith("scan setup"):
            if pending is not None:
                found.append(Scrub(pending, None))
            pending = e.when if "func=1" in e.text else None
        elif e.text.startswith("scan done") and pending is not None:
            match = re.search(r"errors=(\d+)", e.text)
            found.append(Scrub(pending, int(match.group(1)) if match else None))
            pending = None
        elif e.text.startswith(("scan cancelled", "scan aborted")) and pending is not None:
            found.append(Scrub(pending, None))
            pending = None
    if pending is not None:
        found.append(Scrub(pending, None))
    return found


def last_receive(events: Sequence[Event], dst: str) -> str | None:
    """When the last receive into DST's tree was logged (the command or OpenZFS's own
    `receive`/`finish receiving` line), None when the history holds none."""
    times = [e.when for e in events if "receiv" in e.text and _names_tree(e.text, dst)]
    return max(times) if times else None


def _names_tree(text: str, dst: str) -> bool:
    """Whether a history line names DST's tree, compared below the pool's name: a pool's
    history keeps the name it had then (`zfs receive tmppool/a` before `zpool import tmppool
    data`), and matching the old name would take a scrub from before the copy for proof."""
    below = _below_pool(dst)
    return any(
        w == below or w.startswith((below + "/", below + "@"))
        for w in map(_below_pool, text.split())
    ) or (below == "" and "receiv" in text)


def _below_pool(name: str) -> str:
    """`pool/a/b@s` -> `a/b@s`; the pool itself (or any other word) -> ``."""
    pool, sep, rest = name.partition("/")
    return rest if sep and pool else ""


def check_pool_state(dst: str, events: Sequence[Event], scan: str, strict: bool) -> list[Finding]:
    """unverified-copy when no clean scrub started after the last receive into dst (or, with
    no receive in the history, none at all); it names the risky pool operations since the
    last clean scrub.  A warning; with --strict it fails."""
    received = last_receive(events, dst)
    clean = [s for s in scrubs(events) if s.errors == 0]
    after = [s for s in clean if received is None or s.started > received]
    last_clean = clean[-1].started if clean else ""
    risky = [f"{e.when} {e.text}" for e in events if not e.internal and e.when > last_clean
             and RISKY.match(e.text)]  # fmt: skip
    status_clean = "with 0 errors" in scan and scan.startswith("scrub repaired")
    if after and not risky and status_clean:
        return []
    pool = dst.partition("/")[0]
    if not after:
        since = f"since the last receive into {dst} ({received})" if received else "at all"
        why = f"pool {pool} shows no scrub that started {since} and finished with 0 errors"
    elif not status_clean:
        why = f"pool {pool}'s last scan is not a clean scrub: {scan or 'none shown'}"
    else:
        why = f"pool {pool} was changed after its last clean scrub ({last_clean})"
    message = f"{why}: the copy's blocks were never read back (`zpool scrub -w {pool}`)"
    if risky:
        message += f"; since the last clean scrub: {listed(risky, 3)}"
    details = {"pool": pool, "last_receive": received, "operations": risky[:3]}
    severity = Severity.FAIL if strict else Severity.WARNING
    return [Finding(KIND, severity, dst, message, details)]


def unreadable(dst: str, error: str) -> Finding:
    pool = dst.partition("/")[0]
    return Finding(
        KIND,
        Severity.UNVERIFIED,
        dst,
        f"pool {pool}'s status or history could not be read, so whether the copy was "
        f"scrubbed is unknown: {error}",
        {"pool": pool},
    )
