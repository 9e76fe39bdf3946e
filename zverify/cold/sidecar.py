"""The sidecar NAME.json beside a stream: its format, in one place.

`cold send` writes it (document()) for people and for tools without zverify: the dataset,
the snapshots and their GUIDs, the size, the SHA-256 of what was stored and the command.  A
restore never needs it.  `cold check` holds it against the stream it describes (mismatch()),
and `cold repair` against a rebuilt stream (read_object()).  It is read like any archive
file: a regular file, never followed, and at most 1 MiB of JSON, never nested too deeply.
"""

import os
import time
from collections.abc import Callable

from zverify import __version__, boundedjson, provenance
from zverify.cold import entries, names
from zverify.cold.entries import FileStamp
from zverify.cold.plan import SendPlan
from zverify.sendstream.chain import ArchivedFile
from zverify.sendstream.report import StreamReport

MAX_BYTES = 1 << 20  # far above any sidecar send writes; a bigger one is read cut short


def document(
    dataset: str,
    plan: SendPlan,
    argv: list[str],
    report: StreamReport,
    digest: str | None,
    zfs_version: list[str],
) -> dict[str, object]:
    """The sidecar of a stream just proven: report is its scan, digest its stored SHA-256
    (for `sha256sum`; None in a bucket, where the stream's own digests are added instead)."""
    first, last = report.substreams[0], report.substreams[-1]
    return {
        "dataset": dataset,
        "from_snapshot": plan.base_name,
        "from_guid": str(first.fromguid),
        "to_snapshot": plan.to.name,
        "to_guid": str(last.toguid),
        "snapshots": [s.toname.partition("@")[2] for s in report.substreams],
        "kind": "full" if plan.base is None else "intermediate" if plan.intermediate else
        "incremental",
        "bytes": report.size,
        **_packed(report),
        **({"sha256": digest} if digest is not None else {}),
        "command": ["zfs", *argv],
        "created": int(time.time()),
        "zfs_version": zfs_version,
        "zverify_version": __version__,
        provenance.KEY: provenance.producer(),  # as in every JSON document zverify writes
    }  # fmt: skip


def _packed(report: StreamReport) -> dict[str, object]:
    """A compressed file: its compression and its own size (bytes stays the stream's)."""
    if report.compression is None:
        return {}
    return {"compression": report.compression, "file_bytes": report.file_bytes}


def read(path: str, expect: FileStamp | None = None) -> object:
    """The JSON value of a sidecar (a regular file, never followed).  Raises OSError,
    ValueError (also for JSON nested too deeply to parse) or entries.Changed."""
    fd = entries.open_regular(path, expect)
    try:
        return boundedjson.loads(os.read(fd, MAX_BYTES))
    finally:
        os.close(fd)


def read_object(directory: str, stream: str) -> dict[str, object] | None:
    """The stream's sidecar, when there is one that reads as a JSON object."""
    try:
        doc = read(os.path.join(directory, stream + names.SIDECAR))
    except (OSError, ValueError, entries.Changed):
        return None
    return doc if isinstance(doc, dict) else None


def facts(archived: ArchivedFile, size: int, kind: str) -> dict[str, object]:
    """What a sidecar says of an intact stream, as the stream itself says it."""
    first, last = archived.steps[0], archived.steps[-1]
    return {
        "dataset": last.dataset,
        "from_guid": str(first.from_guid),
        "to_guid": str(last.to_guid),
        "bytes": size,
        "kind": kind,
        "snapshots": [s.snapshot for s in archived.steps],
    }


def load(key: str, read: Callable[[], bytes]) -> dict[str, object] | tuple[str, str]:
    """The sidecar key as a JSON object (its bytes from read()), or (kind, message) of why
    not: "unreadable" when it cannot be read (no verdict on it: exit 2), "sidecar-mismatch"
    when it was read and is not what a sidecar is."""
    name = names.shown(os.path.basename(key))
    try:
        doc = boundedjson.loads(read())
    except (OSError, entries.Changed) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else err
        return "unreadable", f"{name} cannot be read: {why}"
    except ValueError as err:  # read, and not JSON (or nested past any sidecar's depth)
        return "sidecar-mismatch", f"{name} cannot be read: {err}"
    if not isinstance(doc, dict):
        return "sidecar-mismatch", f"{name} is not a JSON object"
    return doc


def mismatch(
    key: str, doc: dict[str, object] | tuple[str, str], actual: dict[str, object]
) -> tuple[str, str] | None:
    """(kind, message): how the sidecar key (doc: what load() made of it) disagrees with its
    stream's facts, or None.  A key it does not have is no disagreement: its sha256 is for
    tools without zverify (the stream's own checksums cover every byte).  A sidecar that
    cannot be read is "unreadable" (no verdict on it: exit 2), one read but not what it
    should be "sidecar-mismatch" (load())."""
    if isinstance(doc, tuple):
        return doc
    name = names.shown(os.path.basename(key))
    wrong = [
        f"{key} {doc[key]!r} (the stream: {value!r})"
        for key, value in actual.items()
        if key in doc and doc[key] != value
    ]
    return ("sidecar-mismatch", f"{name} says {'; '.join(wrong)}") if wrong else None
