"""What a send-stream check finds, as data: StreamReport and the parts it is made of.

Kept apart from the checker (validate) and the package rules (package) because these
types are what the rest of zverify reads -- the CLI renders them, cold archives store
them in sidecars, restore and repair act on their verdict -- while how a report is
filled in is nobody's business but validate's.  `StreamReport.exit_code` is the one
place a stream's verdict becomes an exit code (through zverify.exitcodes); each type's
`as_dict` is its JSON shape (zverify/schemas, `zverify schema stream-verify`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zverify import exitcodes
from zverify.sendstream import format as fmt
from zverify.sendstream.format import BeginFlag
from zverify.sendstream.nvlist import NvDict


@dataclass(frozen=True, slots=True)
class StreamProblem:
    """Something wrong (or, as a warning, unusual) at a place in the stream."""

    offset: int
    record: int
    message: str
    code: str
    span: tuple[int, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"offset": self.offset, "record": self.record}
        out |= {"code": self.code, "message": self.message}
        if self.span:
            out["span"] = list(self.span)
        return out


@dataclass(slots=True)
class Substream:
    """One snapshot's BEGIN..END: identity, features and what it holds."""

    index: int
    offset: int
    record: int
    toname: str
    toguid: int
    fromguid: int
    creation_time: int
    objset_type: int
    flags: int
    features: int
    nvlist: NvDict | None = None
    counts: dict[str, int] = field(default_factory=dict)
    logical_bytes: int = 0
    payload_bytes: int = 0
    end_offset: int | None = None
    end_ok: bool | None = None
    end_checksum: tuple[int, int, int, int] | None = None  # its END's Fletcher-4, as computed

    @property
    def complete(self) -> bool:
        return self.end_offset is not None

    @property
    def stream_bytes(self) -> int | None:
        return None if self.end_offset is None else self.end_offset + fmt.RECORD_SIZE - self.offset

    @property
    def dataset(self) -> str:
        return self.toname.split("@", 1)[0]

    @property
    def kind(self) -> str:
        if self.flags & BeginFlag.CLONE:
            return "clone"
        return "incremental" if self.fromguid else "full"

    def crypt(self, key: str) -> int | None:
        """A number from the raw-send key nvlist (to_ivset_guid, from_ivset_guid...)."""
        keydata = (self.nvlist or {}).get("crypt_keydata")
        value = keydata.get(key) if isinstance(keydata, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "offset": self.offset,
            "toname": self.toname,
            "toguid": str(self.toguid),
            "fromguid": str(self.fromguid),
            "kind": self.kind,
            "creation_time": self.creation_time,
            "objset_type": fmt.OBJSET_TYPES.get(self.objset_type, str(self.objset_type)),
            "flags": fmt.flag_names(self.flags),
            "features": fmt.feature_names(self.features),
            "counts": self.counts,
            "logical_bytes": self.logical_bytes,
            "payload_bytes": self.payload_bytes,
            "stream_bytes": self.stream_bytes,
            "complete": self.complete,
        }
        nv = self.nvlist or {}
        if "resume_object" in nv:
            out["resume"] = {"object": nv.get("resume_object"), "offset": nv.get("resume_offset")}
        for key in ("to_ivset_guid", "from_ivset_guid"):
            if (value := self.crypt(key)) is not None:
                out[key] = str(value)
        return out


@dataclass(frozen=True, slots=True)
class Dataset:
    """One entry of the compound header's `fss`: a dataset and its snapshots' GUIDs."""

    guid: int
    name: str
    snapshots: dict[str, int]
    origin: int | None

    def as_dict(self) -> dict[str, Any]:
        snaps = {name: str(guid) for name, guid in self.snapshots.items()}
        out: dict[str, Any] = {"name": self.name, "guid": str(self.guid), "snapshots": snaps}
        if self.origin is not None:
            out["origin"] = str(self.origin)
        return out


@dataclass(slots=True)
class CompoundHeader:
    """The package header of `zfs send -R/-I/-p`: its BEGIN and decoded XDR nvlist."""

    offset: int
    toname: str
    features: int
    nvlist: NvDict | None
    datasets: list[Dataset] = field(default_factory=list)
    nvlist_bytes: int = 0

    def text(self, key: str) -> str | None:
        value = (self.nvlist or {}).get(key)
        return value if isinstance(value, str) else None

    @property
    def recursive(self) -> bool:
        return self.nvlist is not None and "not_recursive" not in self.nvlist

    @property
    def dataset(self) -> str:
        return self.toname.split("@", 1)[0]

    @property
    def shape_known(self) -> bool:
        """False when a payload was there but not decoded: -R or not is then unknown."""
        return not self.nvlist_bytes or self.nvlist is not None

    def as_dict(self) -> dict[str, Any]:
        nv = self.nvlist or {}
        return {
            "offset": self.offset,
            "toname": self.toname,
            "features": fmt.feature_names(self.features),
            "tosnap": self.text("tosnap"),
            "fromsnap": self.text("fromsnap"),
            "recursive": self.recursive,
            "raw": nv.get("raw") is True,
        }


@dataclass(slots=True)
class StreamReport:
    """Everything learned about one stream; `valid` is the verdict."""

    source: str
    readable: bool = True
    size: int = 0
    records: int = 0
    big_endian: bool = False
    header: CompoundHeader | None = None
    substreams: list[Substream] = field(default_factory=list)
    problems: list[StreamProblem] = field(default_factory=list)
    warnings: list[StreamProblem] = field(default_factory=list)
    problems_dropped: int = 0
    substreams_dropped: int = 0  # found but not listed: past the limits (see MAX_SUBSTREAMS)
    relayed: int | None = None  # bytes passed on to relay_to (verify_stream), else None
    compression: str | None = (
        None  # zstd, gzip, xz, lz4, bzip2: the file holds the stream compressed
    )
    file_bytes: int | None = None  # bytes of the file read (compressed), when not size

    @property
    def valid(self) -> bool:
        return self.readable and not self.problems and not self.problems_dropped

    @property
    def exit_code(self) -> int:
        return exitcodes.verdict(unverified=not self.readable, different=not self.valid)

    @property
    def kind(self) -> str:
        """full, incremental, clone, replication package, incremental package, full package
        (`zfs send -p fs@s`) or clone package (or unknown)."""
        if self.header is not None:
            if self.header.recursive:
                return "replication package"
            if len(self.substreams) == 1 and self.substreams[0].kind != "incremental":
                return f"{self.substreams[0].kind} package"
            return "incremental package"
        if not self.substreams:
            return "unknown"
        return self.substreams[0].kind

    def as_dict(self, substreams: bool = True) -> dict[str, Any]:
        """substreams=False: an empty list in their place (rendered one at a time)."""
        out: dict[str, Any] = {
            "file": self.source,
            "valid": self.valid,
            "readable": self.readable,
            "kind": self.kind,
            "byte_order": "big" if self.big_endian else "little",
            "bytes": self.size,
            "compression": self.compression,
            "file_bytes": self.size if self.file_bytes is None else self.file_bytes,
            "records": self.records,
            "substreams": [s.as_dict() for s in self.substreams] if substreams else [],
            "substreams_not_listed": self.substreams_dropped,
            "problems": [p.as_dict() for p in self.problems],
            "problems_not_listed": self.problems_dropped,
            "warnings": [w.as_dict() for w in self.warnings],
        }
        if self.header is not None:
            out["header"] = self.header.as_dict()
            out["datasets"] = [d.as_dict() for d in self.header.datasets]
        return out
