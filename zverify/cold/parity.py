"""Reading the parity beside the streams of an archive: which PAR2 files protect which stream,
whether they are intact and what they can repair.  Making it is zverify.cold.protect.

The stream NAME is protected by NAME.par2 (the index) and NAME.vol*.par2 (the recovery
blocks), standard PAR2 files made by the par2 program (zverify.par2.tool), so that `par2
repair` works without zverify.  A stream's parity is read whole by `cold check` (every packet's
MD5, zverify.par2.packets): damaged parity is reported with how many recovery blocks remain,
parity of another file (name, size or first 16 KiB) as a mismatch.  For a damaged stream, par2
itself says whether the repair is possible and how many blocks are damaged.
"""

import hashlib
import os
import re
from dataclasses import dataclass, field

from zverify.cold import entries, names
from zverify.cold.entries import FileStamp
from zverify.errors import ColdError
from zverify.par2 import packets, tool

SUFFIX = ".par2"
_VOLUME = re.compile(r"\.vol\d+\+\d+$")
HEAD = 16 * 1024  # PAR2 keeps the MD5 of a file's first 16 KiB


def is_parity(name: str) -> bool:
    return name.endswith(SUFFIX)


def is_volume(name: str) -> bool:
    """NAME.volN+M.par2 (recovery blocks), as opposed to the index NAME.par2."""
    return bool(_VOLUME.search(name[: -len(SUFFIX)]))


def stream_of(name: str) -> str:
    """The stream a parity file protects, by its name: NAME.par2, NAME.vol0+20.par2 -> NAME."""
    return _VOLUME.sub("", name[: -len(SUFFIX)])


@dataclass
class Parity:
    """The parity of one stream, as read just now."""

    files: list[str]
    recovery_blocks: int = 0
    source_blocks: int | None = None
    damaged_bytes: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)  # (kind, message)
    repair: tool.Verdict | None = None  # par2's verdict, for a stream that is not intact
    md5: bytes | None = None  # of the whole stream, as the parity says

    @property
    def percent(self) -> float | None:
        if not self.source_blocks:
            return None
        return 100 * self.recovery_blocks / self.source_blocks

    @property
    def usable(self) -> bool:
        """Describes this stream (whatever its state): par2 may be run on it."""
        return self.source_blocks is not None and not any(
            kind == "parity-mismatch" for kind, _ in self.problems
        )

    @property
    def index(self) -> str:
        """The file to give par2 (any file of the set will do; the index when there)."""
        indexes = [f for f in self.files if not is_volume(f)]
        return (indexes or self.files)[0]


def inspect(
    directory: str,
    stream: str,
    files: dict[str, FileStamp],
    intact: FileStamp | None,
    readable: bool = True,
) -> Parity:
    """Read the parity files of stream (name -> the file that was listed).  intact: the
    stream's identity when it was just proven intact, else None (then par2 is asked whether
    it can be repaired, unless the stream could not be read: par2 stops at a read error)."""
    out = Parity(sorted(files))
    found = _scan(directory, out, files)
    if found is None:
        return out
    described = _described(stream, found, out)
    if described is None:
        return out
    assert found.slice_size is not None
    out.source_blocks = found.source_blocks(described.length)
    out.recovery_blocks = found.recovery_blocks
    out.damaged_bytes = found.damaged_bytes
    out.md5 = described.md5
    if found.damaged_bytes or not found.recovery_blocks:
        out.problems.append(("parity-damaged", _damage_text(found)))
    if intact is not None:
        _same_file(directory, stream, intact, described, out)
    elif not readable:
        why = "bytes of the stream cannot be read; `zverify cold repair` reads around them"
        out.repair = tool.Verdict("unknown", detail=why)
    else:
        out.repair = _ask_par2(directory, out)
    return out


def _scan(directory: str, out: Parity, files: dict[str, FileStamp]) -> packets.Scan | None:
    fds: list[tuple[str, int]] = []
    try:
        for name in out.files:
            try:
                fds.append((name, entries.open_regular(os.path.join(directory, name), files[name])))
            except (OSError, entries.Changed) as err:
                why = err.strerror if isinstance(err, OSError) else str(err)
                out.problems.append(("unreadable", f"{names.shown(name)} cannot be read: {why}"))
        return packets.scan(fds)
    except OSError as err:
        out.problems.append(("unreadable", f"its parity cannot be read: {err.strerror}"))
        return None
    finally:
        for _name, fd in fds:
            os.close(fd)


def _described(stream: str, found: packets.Scan, out: Parity) -> packets.DescribedFile | None:
    """The description of stream in its parity, when the parity protects that one file."""
    if found.slice_size is None or not found.recovery_files:
        out.problems.append(("parity-damaged", "its parity has no intact main packet: unusable"))
        return None
    if len(found.recovery_files) != 1:
        out.problems.append(
            ("parity-mismatch", f"its parity protects {len(found.recovery_files)} files, not one")
        )
        return None
    described = found.described.get(found.recovery_files[0])
    if described is None:
        out.problems.append(("parity-damaged", "its parity has no intact file description"))
        return None
    if described.name != os.fsencode(stream):
        other = names.shown(os.fsdecode(described.name))
        out.problems.append(("parity-mismatch", f"its parity protects another file ({other})"))
        return None
    return described


def _damage_text(found: packets.Scan) -> str:
    where = ""
    if found.first_damage is not None:
        name, offset = found.first_damage
        where = f" (first at byte {offset} of {names.shown(name)})"
    return (
        f"its parity is damaged: {found.damaged_bytes:,} bytes in no intact packet{where}; "
        f"{found.recovery_blocks} recovery blocks intact"
    )


def _same_file(
    directory: str, stream: str, intact: FileStamp, described: packets.DescribedFile, out: Parity
) -> None:
    """An intact stream's parity must describe it: same size, same first 16 KiB."""
    if described.length != intact.size:
        out.problems.append(
            (
                "parity-mismatch",
                f"its parity protects {described.length:,} bytes, not {intact.size:,}",
            )
        )
        return
    try:
        fd = entries.open_regular(os.path.join(directory, stream), intact)
        try:
            head = os.pread(fd, HEAD, 0)
        finally:
            os.close(fd)
    except (OSError, entries.Changed) as err:
        why = err.strerror if isinstance(err, OSError) else str(err)
        out.problems.append(("unreadable", f"the stream cannot be read again: {why}"))
        return
    if hashlib.md5(head, usedforsecurity=False).digest() != described.md5_16k:
        out.problems.append(("parity-mismatch", "its parity protects other bytes (first 16 KiB)"))


def _ask_par2(directory: str, out: Parity) -> tool.Verdict:
    try:
        return tool.verify(directory, os.path.join(directory, out.index))
    except ColdError as err:
        return tool.Verdict("unknown", detail=str(err))


def percent_of(parities: list[Parity]) -> int | None:
    """The archive's parity level (the highest of its usable parity): new streams keep it."""
    levels = [p.percent for p in parities if p.usable and p.percent]
    return max(1, round(max(levels))) if levels else None
