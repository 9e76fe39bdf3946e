"""--content: read the latest common snapshot back on both sides and compare it.

Equal GUIDs promise equal content; reading proves the replica's blocks actually come back
off the new pool before the only other copy is destroyed.  A filesystem's snapshot is
compared file by file by the `zverify compare` engine (full profile); a volume's data is
compared byte for byte from its device, which holds the common snapshot only when nothing
was written since (written@ is 0 on both sides, or its bytes were proven to be the
snapshot's: see volume_bookkeeping; the re-check at the end catches a write during the
read).  A read error is `content-error`: unverified, never READY.
"""

import contextlib
import os
from collections.abc import Iterator
from dataclasses import replace
from typing import BinaryIO

from zverify.compare.diffs import Difference
from zverify.compare.policy import ComparePolicy
from zverify.compare.result import UNVERIFIED_KINDS, CompareResult
from zverify.cutover.checks import METADATA_ONLY_MAX, Pair, Written
from zverify.cutover.findings import Finding, Severity, listed
from zverify.cutover.snapshots import Common
from zverify.errors import ZverifyError
from zverify.pathnames import for_terminal
from zverify.progress import CompareHook
from zverify.trees.compare import compare_trees
from zverify.trees.options import CompareOptions
from zverify.zfs import command
from zverify.zfs.inventory import Dataset

SHOWN = 10  # differences listed in one finding
CHUNK = 1 << 20


def compare_content(
    pair: Pair,
    common: Common,
    written: tuple[Written, Written],
    threads: int | None,
    progress: CompareHook | None = None,
) -> list[Finding]:
    assert pair.dst is not None
    try:
        if pair.src.type == "volume":
            return _volumes(pair, common, written)
        with (
            _snapshot_dir(pair.src, common.src.name) as a,
            _snapshot_dir(pair.dst, common.dst.name) as b,
        ):
            shown = _FirstFew()
            options = CompareOptions(ComparePolicy(), threads=threads)
            result = compare_trees(a, b, options, progress=progress, sink=shown.add)
    except ZverifyError as err:
        return [_error(pair, common, str(err))]
    return _findings(pair.src.name, common, result, shown)


class _FirstFew:
    """The first SHOWN differences, and the first SHOWN unverified ones: a finding lists
    those and counts the rest, so a pool of millions of differences costs no memory."""

    def __init__(self) -> None:
        self.differences: list[Difference] = []
        self.unverified: list[Difference] = []

    def add(self, d: Difference) -> None:
        if len(self.differences) < SHOWN:
            self.differences.append(d)
        if d.kind in UNVERIFIED_KINDS and len(self.unverified) < SHOWN:
            self.unverified.append(d)


@contextlib.contextmanager
def _snapshot_dir(ds: Dataset, snapshot: str) -> Iterator[str]:
    """The snapshot's directory: under .zfs of the mounted dataset (reached even when
    snapdir=hidden), else a read-only mount of the snapshot itself."""
    if ds.value("mounted") == "yes":
        yield os.path.join(ds.value("mountpoint"), ".zfs", "snapshot", snapshot)
    else:
        with command.mounted_snapshot(f"{ds.name}@{snapshot}") as where:
            yield where


def _findings(
    dataset: str, common: Common, result: CompareResult, shown: _FirstFew
) -> list[Finding]:
    where = f"@{common.src.name}"
    if result.unverified_count:
        n, bad = result.unverified_count, shown.unverified
        return [
            Finding(
                "content-error",
                Severity.UNVERIFIED,
                dataset,
                f"{n} entr{'y' if n == 1 else 'ies'} of {where} could not "
                f"be read back and compared: {_listed(bad, n)}",
                {"entries": [_entry(d) for d in bad]},
            )
        ]
    if result.total:
        n, diffs = result.total, shown.differences
        return [
            Finding(
                "content",
                Severity.FAIL,
                dataset,
                f"{n} difference(s) in {where}: {_listed(diffs, n)}",
                {"differences": [_entry(d) for d in diffs]},
            )
        ]
    return []


def _entry(d: Difference) -> dict[str, str]:
    return {"path": for_terminal(d.path) or ".", "kind": d.kind.value, "detail": d.detail}


def _listed(diffs: list[Difference], total: int) -> str:
    texts = [f"{for_terminal(d.path) or '.'} ({d.kind.value}: {d.detail})" for d in diffs]
    return listed(texts, SHOWN, total=total)


def _error(pair: Pair, common: Common, why: str) -> Finding:
    return Finding(
        "content-error",
        Severity.UNVERIFIED,
        pair.src.name,
        f"@{common.src.name} could not be read back: {why}",
    )


def volume_bookkeeping(
    pair: Pair, common: Common, written: tuple[Written, Written]
) -> tuple[Written, Written]:
    """A volume has no paths for `zfs diff` to list: a small written@ on one side (a pool
    import rewrites the objset block, see checks.METADATA_ONLY_MAX) is shown to be no data
    by comparing that side's bytes with a device that holds the common snapshot: the other
    side's volume when nothing was written there, else a snapshot device (snapdev=visible).
    Reads the whole volume, and only when written@ is that small."""
    assert pair.dst is not None
    src, dst = written
    live = {"src": _device(pair.src.name), "dst": _device(pair.dst.name)}
    snaps = [_device(f"{pair.src.name}@{common.src.name}")]
    snaps.append(_device(f"{pair.dst.name}@{common.dst.name}"))
    if 0 < src.bytes <= METADATA_ONLY_MAX:
        ref = live["dst"] if dst.bytes == 0 else _visible(snaps)
        src = replace(src, same_bytes=_same_bytes(live["src"], ref))
    if 0 < dst.bytes <= METADATA_ONLY_MAX:
        ref = live["src"] if src.bytes == 0 else _visible(snaps)
        dst = replace(dst, same_bytes=_same_bytes(live["dst"], ref))
    return src, dst


def _device(name: str) -> str:
    return f"/dev/zvol/{name}"


def _visible(devices: list[str]) -> str | None:
    return next((d for d in devices if os.path.exists(d)), None)


def _same_bytes(device: str, reference: str | None) -> bool | str:
    """True when device holds exactly reference's bytes; False when they differ; a str
    saying why they could not be compared."""
    if reference is None:
        return "both sides were written and no snapshot device is visible (snapdev=hidden)"
    try:
        return first_difference(device, reference) is None
    except OSError as err:
        return f"{err.filename}: {err.strerror}"


def _volumes(pair: Pair, common: Common, written: tuple[Written, Written]) -> list[Finding]:
    assert pair.dst is not None
    if any(w.bytes and not w.metadata_only for w in written):
        return [
            Finding(
                "content-skipped",
                Severity.NOTE,
                pair.src.name,
                "volume content not compared: written since the common snapshot",
            )
        ]
    src, dst = (f"/dev/zvol/{d.name}" for d in (pair.src, pair.dst))
    try:
        at = first_difference(src, dst)
    except OSError as err:
        return [_error(pair, common, f"{err.filename}: {err.strerror}")]
    if at is None:
        return []
    return [
        Finding(
            "content",
            Severity.FAIL,
            pair.src.name,
            f"volume data differs from byte {at:,} ({src} vs {dst})",
            {"offset": at},
        )
    ]


def first_difference(a: str, b: str) -> int | None:
    """The offset of the first differing byte of two devices (or their common length where
    one ends first), or None when they are equal.  OSError names the device and offset."""
    with open(a, "rb", buffering=0) as fa, open(b, "rb", buffering=0) as fb:
        offset = 0
        while True:
            x, y = _read_full(fa, a, offset), _read_full(fb, b, offset)
            if x != y:
                first = next(
                    (i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), None
                )
                return offset + (first if first is not None else min(len(x), len(y)))
            if not x:
                return None
            offset += len(x)


def _read_full(f: BinaryIO, path: str, offset: int) -> bytes:
    """CHUNK bytes, or fewer only at the end of the device."""
    data = b""
    while len(data) < CHUNK:
        try:
            more = f.read(CHUNK - len(data))
        except OSError as err:
            raise OSError(
                err.errno, f"{err.strerror} at byte {offset + len(data):,}", path
            ) from None
        if not more:
            break
        data += more
    return data
