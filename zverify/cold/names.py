"""Archive file names: hints for people, never what a chain is built from.

The convention (the one people use when they archive by hand, and the one `cold send` writes):

  NAME@S.zfsfull          a full stream of snapshot S (or a `zfs send -R` package)
  NAME@A-@B.zfsinc        an incremental from A to B (`zfs send -i`)
  NAME@A-@B.zfsincstream  a package from A to B with every snapshot between (`zfs send -I`)

optionally followed by a compression suffix (.zst, .gz, .xz, .lz4: the content is recognised by
its magic, never by the suffix).  NAME is the dataset or a trailing part of it: `setname` for
`poolname/setname`, as people type it after `zfs send poolname/setname@0 >`.  `cold send` writes
the whole dataset with '%' written '%25', '/' written '%2F' and '@' written '%40', so any dataset
name makes one file name and back.

Chains are always rebuilt from the stream headers.  A name is held against its stream only where
it contradicts it (another dataset, other snapshots, full against incremental); a name outside
the convention is no problem at all.

Beside the streams, the suffixes of what zverify keeps with them (SIDECAR, MANIFEST, DAMAGED)
and of its unfinished work (PARTIAL, WORK_DIRS): every cold module reads them from here.
"""

import os
import re
from dataclasses import dataclass

from zverify.pathnames import display, for_terminal

FULL, INCREMENTAL, INTERMEDIATE = ".zfsfull", ".zfsinc", ".zfsincstream"
PARTIAL = ".partial"  # NAME.partial: a stream being written, never part of a chain
SIDECAR = ".json"  # NAME.json beside a stream: metadata for people, never needed to restore
MANIFEST = ".manifest"  # NAME.manifest: the files of the snapshot it sends (cold.contents)
LEDGER = ".zverify-ledger.jsonl"  # the proof ledger a directory archive keeps (proof/ledger.py)
DAMAGED = ".damaged"  # NAME.damaged: the original of a repaired stream, kept until removed
PARITY_WORK = ".parity.partial"  # the directory parity is made in
REPAIR_WORK = ".repair.partial"  # the directory a repair runs in
WORK_DIRS = (PARITY_WORK, REPAIR_WORK)
COMPRESSION_SUFFIXES = (".zst", ".zstd", ".gz", ".xz", ".lz4")
_PATTERN = re.compile(
    r"^(?P<dataset>[^@]+)@(?:(?P<from_snap>[^@]+)-@)?(?P<to_snap>[^@]+)"
    r"(?P<suffix>\.zfsfull|\.zfsincstream|\.zfsinc)$"
)


@dataclass(frozen=True)
class ParsedName:
    dataset: str
    from_snap: str | None
    to_snap: str
    kind: str  # "full", "incremental" or "intermediate"


def encode_dataset(dataset: str) -> str:
    return dataset.replace("%", "%25").replace("/", "%2F").replace("@", "%40")


_ESCAPED = re.compile(r"%(25|2[Ff]|40)")


def decode_dataset(text: str) -> str:
    """In one pass (so that "%252F" stays "%2F"), and in either case: "%2f" is how some
    tools percent-encode, and a name is only a hint."""
    return _ESCAPED.sub(lambda m: bytes.fromhex(m[1]).decode(), text)


def parse(name: str) -> ParsedName | None:
    """What a file name (or the last part of a path) claims, or None when it does not follow
    the convention."""
    name = name.rpartition("/")[2]
    name = next((name[: -len(s)] for s in COMPRESSION_SUFFIXES if name.endswith(s)), name)
    m = _PATTERN.match(name)
    if m is None:
        return None
    kind = {FULL: "full", INCREMENTAL: "incremental", INTERMEDIATE: "intermediate"}[m["suffix"]]
    if (kind == "full") != (m["from_snap"] is None):
        return None  # a full names one snapshot, an incremental two
    return ParsedName(decode_dataset(m["dataset"]), m["from_snap"], m["to_snap"], kind)


def names_dataset(named: str, dataset: str) -> bool:
    """Whether a name's dataset part speaks for dataset: the whole name, or its trailing
    components (`setname` and `poolname/setname` both name `poolname/setname`)."""
    return dataset == named or dataset.endswith("/" + named)


def file_name(dataset: str, to_snap: str, from_snap: str | None, intermediate: bool) -> str:
    base = f"{encode_dataset(dataset)}@"
    if from_snap is None:
        return f"{base}{to_snap}{FULL}"
    suffix = INTERMEDIATE if intermediate else INCREMENTAL
    return f"{base}{from_snap}-@{to_snap}{suffix}"


def shown(name: str) -> str:
    """A file name (as os.listdir gives it) on one line for people: bytes that are not UTF-8
    as \\xHH, a newline as \\n (archive directories may hold anything)."""
    return for_terminal(os.fsencode(name))


def for_json(name: str) -> tuple[str, bool]:
    """(text, escaped): a file name for JSON, losslessly (zverify.pathnames.display)."""
    return display(os.fsencode(name))
