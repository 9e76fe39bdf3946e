"""The OpenZFS send-stream format as pure data: record types, flags, feature bits, BEGIN layout.

Values come from OpenZFS's include/sys/zfs_ioctl.h (see docs/design/sendstream-format.md, the
format as the code cites it, and docs/design/sendstream.md, what a verdict proves).  Nothing
here reads a stream; the C scanner frames records and zverify.sendstream.validate interprets
the few headers it hands back (BEGIN and END).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

RECORD_SIZE = 312
"""sizeof(dmu_replay_record_t) in every release from 0.6 to 2.4."""

MAGIC = 0x2F5BACBAC
"""DMU_BACKUP_MAGIC, in drr_begin.drr_magic; its byte order is the stream's."""


class RecordType(enum.IntEnum):
    """drr_type values."""

    BEGIN = 0
    OBJECT = 1
    FREEOBJECTS = 2
    WRITE = 3
    FREE = 4
    END = 5
    WRITE_BYREF = 6
    SPILL = 7
    WRITE_EMBEDDED = 8
    OBJECT_RANGE = 9
    REDACT = 10


class HeaderType(enum.IntEnum):
    """The two low bits of drr_versioninfo."""

    SUBSTREAM = 1
    COMPOUNDSTREAM = 2


class Feature(enum.IntFlag):
    """DMU_BACKUP_FEATURE_* bits (drr_versioninfo >> 2)."""

    DEDUP = 1 << 0
    DEDUPPROPS = 1 << 1
    SA_SPILL = 1 << 2
    EMBED_DATA = 1 << 16
    LZ4 = 1 << 17
    LARGE_BLOCKS = 1 << 19
    RESUMING = 1 << 20
    REDACTED = 1 << 21
    COMPRESSED = 1 << 22
    LARGE_DNODE = 1 << 23
    RAW = 1 << 24
    ZSTD = 1 << 25
    HOLDS = 1 << 26
    SWITCH_TO_LARGE_BLOCKS = 1 << 27
    LONGNAME = 1 << 28
    LARGE_MICROZAP = 1 << 29


KNOWN_FEATURES = 0
for _f in Feature:
    KNOWN_FEATURES |= _f.value

RECEIVED_SINCE: dict[Feature, str] = {
    Feature.LONGNAME: "2.3",
    Feature.LARGE_MICROZAP: "2.3",
}
"""Features OpenZFS 2.1 does not receive, with the first release that does: 2.1's
DMU_BACKUP_FEATURE_MASK (include/sys/zfs_ioctl.h) lacks them, so its receive refuses the
stream (DMU_STREAM_SUPPORTED: "stream has unsupported feature").  zverify's receive rules
are 2.1's: such a stream is not called receivable."""

MAX_NAME = 256
"""ZFS_MAX_DATASET_NAME_LEN (include/sys/fs/zfs.h): a name is shorter than this."""
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.: %")


class BeginFlag(enum.IntFlag):
    """DRR_FLAG_* bits of drr_begin.drr_flags."""

    CLONE = 1 << 0
    CI_DATA = 1 << 1
    FREERECORDS = 1 << 2
    SPILL_BLOCK = 1 << 3


OBJSET_TYPES = {0: "none", 1: "meta", 2: "filesystem", 3: "volume", 4: "other", 5: "any"}

# Which feature a record type needs to appear in a stream written by OpenZFS.
FEATURE_FOR_RECORD: dict[RecordType, Feature] = {
    RecordType.WRITE_BYREF: Feature.DEDUP,
    RecordType.WRITE_EMBEDDED: Feature.EMBED_DATA,
    RecordType.OBJECT_RANGE: Feature.RAW,
    RecordType.REDACT: Feature.REDACTED,
}

# drr_begin: type, payloadlen, magic, versioninfo, creation_time, objset type, flags,
# toguid, fromguid, then the 256-byte toname (offset 56).
_BEGIN = "IIQQQIIQQ"
_END = "II4QQ"  # type, payloadlen, checksum[4], toguid
_TONAME_OFF = 56
_TONAME_LEN = 256


@dataclass(frozen=True, slots=True)
class BeginHeader:
    """The fields of a BEGIN record a validator needs."""

    magic: int
    header_type: int
    features: int
    creation_time: int
    objset_type: int
    flags: int
    toguid: int
    fromguid: int
    toname: str
    payload_len: int


@dataclass(frozen=True, slots=True)
class EndHeader:
    """The fields of an END record."""

    checksum: tuple[int, int, int, int]
    toguid: int
    trailer_zero: bool


def _order(big_endian: bool) -> str:
    return ">" if big_endian else "<"


def parse_begin(raw: bytes, big_endian: bool) -> BeginHeader:
    """Decode a 312-byte BEGIN header read in the stream's byte order."""
    f = struct.unpack_from(_order(big_endian) + _BEGIN, raw)
    name = raw[_TONAME_OFF : _TONAME_OFF + _TONAME_LEN].split(b"\0", 1)[0]
    return BeginHeader(
        magic=f[2],
        header_type=f[3] & 3,
        features=(f[3] >> 2) & 0x3FFF_FFFF,
        creation_time=f[4],
        objset_type=f[5],
        flags=f[6],
        toguid=f[7],
        fromguid=f[8],
        toname=name.decode("utf-8", "surrogateescape"),
        payload_len=f[1],
    )


def parse_end(raw: bytes, big_endian: bool) -> EndHeader:
    """Decode a 312-byte END header read in the stream's byte order."""
    f = struct.unpack_from(_order(big_endian) + _END, raw)
    return EndHeader(
        checksum=(f[2], f[3], f[4], f[5]), toguid=f[6], trailer_zero=not any(raw[280:312])
    )


def feature_names(features: int) -> list[str]:
    """Names of the known bits set in features, then `bit<N>` for unknown ones."""
    names = [f.name for f in Feature if f.name and features & f.value]
    names += [f"bit{i}" for i in range(32) if features & (1 << i) & ~KNOWN_FEATURES]
    return names


def flag_names(flags: int) -> list[str]:
    """Names of the DRR_FLAG_* bits set in flags, then `0x..` for the rest."""
    names = [f.name for f in BeginFlag if f.name and flags & f.value]
    rest = flags & ~sum(f.value for f in BeginFlag)
    return [*names, hex(rest)] if rest else names


def unknown_feature_problem(versioninfo: int) -> str | None:
    """Feature flags no OpenZFS release defines (in the 56-bit field releases from 2.2 read:
    DMU_GET_FEATUREFLAGS; include/sys/zfs_ioctl.h DMU_BACKUP_FEATURE_MASK of master), or
    None.  Such a stream is not judged (exit 2): its records may follow a format zverify does
    not know, so neither "valid" nor "damaged" would be proven.  A receive that reads the
    bits refuses it (DMU_STREAM_SUPPORTED); 2.1 reads 30 bits and ignores the rest."""
    unknown = (versioninfo >> 2) & ~KNOWN_FEATURES
    if not unknown:
        return None
    bits = ", ".join(f"bit{i}" for i in range(62) if unknown >> i & 1)
    return (
        f"feature flags {bits}: no OpenZFS release zverify knows defines them (a newer "
        "sender?); what its records mean is not known, so the stream is not verified"
    )


def feature_problem(versioninfo: int) -> str | None:
    """Why OpenZFS 2.1 refuses a stream for the known feature flags it sets, or None
    (unknown ones: unknown_feature_problem)."""
    features = versioninfo >> 2
    newer = [(f, v) for f, v in RECEIVED_SINCE.items() if features & f.value]
    if newer:
        names = ", ".join(f"{f.name} (OpenZFS {v} or later)" for f, v in newer)
        return (
            f"feature {names}: OpenZFS 2.1, whose receive zverify checks against, refuses "
            "it (stream has unsupported feature); only a newer receive takes it"
        )
    return None


def snapshot_name_problem(name: str, header: bool = False) -> str | None:
    """Why `zfs receive` refuses a BEGIN's toname, or None: libzfs_sendrecv.c
    zfs_receive_impl ("bad snapshot name" without an `@`) and the name checks of
    zfs_namecheck.c (entity_namecheck: one delimiter, non-empty components of
    [A-Za-z0-9-_.: %], no `.` or `..`, fewer than 256 bytes).  header: a package's compound
    BEGIN, of which libzfs checks only the `@` (a send of a live filesystem writes `fs@`)."""
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) >= MAX_NAME:
        return f"is {len(raw)} bytes long: a name is under {MAX_NAME} (ZFS_MAX_DATASET_NAME_LEN)"
    if name.count("@") != 1 or "#" in name:
        return "is no snapshot name: it needs exactly one `@` (bad snapshot name)"
    if header:
        return None
    dataset, snap = name.split("@")
    parts = dataset.split("/")
    if not snap or any(not p for p in parts):
        return "has an empty component (entity_namecheck)"
    if any(p in (".", "..") for p in parts):
        return "has a `.` or `..` component (entity_namecheck)"
    bad = sorted({c for c in name if c not in _NAME_CHARS and c not in "/@"})
    if bad:
        shown = ", ".join(repr(c) for c in bad[:5])
        return f"holds characters a ZFS name cannot: {shown} (entity_namecheck)"
    return None
