"""Parity beside the streams of an archive: which PAR2 files protect which stream, whether they
are intact and what they can repair, and adding them (`cold send --parity`, `cold parity`).

The stream NAME is protected by NAME.par2 (the index) and NAME.vol*.par2 (the recovery
blocks), standard PAR2 files made by the par2 program (zverify.par2.tool), so that `par2
repair` works without zverify.  A stream's parity is read whole by `cold check` (every packet's
MD5, zverify.par2.packets): damaged parity is reported with how many recovery blocks remain,
parity of another file (name, size or first 16 KiB) as a mismatch.  For a damaged stream, par2
itself says whether the repair is possible and how many blocks are damaged.

Parity is made only from a stream that was proven (`cold send` after the stream validated, `cold
parity` after `cold check` read it completely), in NAME.parity.partial/ (a new directory,
flock()ed while par2 writes: `cold check` sees it in progress and `cold clean` removes it only
when nobody holds it).  The stream must still be the file that was proven when par2 is done;
the files are then renamed into the archive, never over an existing one, the recovery blocks
first and the index last, so that what is there at any moment is usable parity.
"""

import hashlib
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zverify.cold import entries, names, workdir

if TYPE_CHECKING:
    from zverify.cold.check import ArchiveReport, FileReport
from zverify.cold.entries import Identity
from zverify.errors import ColdError
from zverify.par2 import packets, tool

DEFAULT_PERCENT = 10  # of `cold parity` in an archive without parity: ~10% more space
SUFFIX = ".par2"
WORK = ".parity.partial"  # the directory parity is made in
_VOLUME = re.compile(r"\.vol\d+\+\d+$")
HEAD = 16 * 1024  # PAR2 keeps the MD5 of a file's first 16 KiB


def is_parity(name: str) -> bool:
    return name.endswith(SUFFIX)


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
        indexes = [f for f in self.files if not _VOLUME.search(f[: -len(SUFFIX)])]
        return (indexes or self.files)[0]


def inspect(
    directory: str,
    stream: str,
    files: dict[str, Identity],
    intact: Identity | None,
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


def _scan(directory: str, out: Parity, files: dict[str, Identity]) -> packets.Scan | None:
    fds: list[tuple[str, int]] = []
    try:
        for name in out.files:
            try:
                fds.append((name, entries.open_regular(os.path.join(directory, name), files[name])))
            except (OSError, entries.Changed) as err:
                why = err.strerror if isinstance(err, OSError) else str(err)
                out.problems.append(
                    ("parity-damaged", f"{names.shown(name)} cannot be read: {why}")
                )
        return packets.scan(fds)
    except OSError as err:
        out.problems.append(("parity-damaged", f"its parity cannot be read: {err.strerror}"))
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
    directory: str, stream: str, intact: Identity, described: packets.DescribedFile, out: Parity
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
        out.problems.append(("parity-damaged", f"the stream cannot be read again: {why}"))
        return
    if hashlib.md5(head, usedforsecurity=False).digest() != described.md5_16k:
        out.problems.append(("parity-mismatch", "its parity protects other bytes (first 16 KiB)"))


def _ask_par2(directory: str, out: Parity) -> tool.Verdict:
    try:
        return tool.verify(directory, os.path.join(directory, out.index))
    except ColdError as err:
        return tool.Verdict("unknown", detail=str(err))


def add(directory: str, stream: str, proven: Identity, percent: int) -> list[str]:
    """Make the parity of the proven stream and rename it into the archive; the names made.
    The caller holds the archive's writers' lock.  Raises ColdError (nothing left behind)."""
    work = os.path.join(directory, stream + WORK)
    fd = workdir.make(work)
    try:
        source, output = os.path.join(directory, stream), os.path.join(work, stream + SUFFIX)
        tool.create(directory, source, output, percent)
        _still(directory, stream, proven)
        made = _check_made(work, stream)
        _place(directory, work, made)
    except (ColdError, OSError) as err:
        why = f"making parity failed: {err.strerror}" if isinstance(err, OSError) else str(err)
        left = workdir.remove(work, fd)
        raise ColdError(f"{why}; {left}" if left else why) from None
    left = workdir.remove(work, fd)
    if left:
        raise ColdError(f"parity made, but {left}")
    return made


def _still(directory: str, stream: str, proven: Identity) -> None:
    """par2 read the stream by its name: it must still be the file that was proven."""
    try:
        st = os.lstat(os.path.join(directory, stream))
    except OSError as err:
        raise ColdError(
            f"{names.shown(stream)}: {err.strerror} while its parity was made"
        ) from None
    if not proven.unchanged(st):
        raise ColdError(f"{names.shown(stream)} changed while its parity was made: none kept")


def _check_made(work: str, stream: str) -> list[str]:
    """The files par2 made, read back: intact, describing the stream, with recovery blocks.
    Recovery blocks first, the index last (the order they are renamed in)."""
    made = sorted(os.listdir(work), key=lambda n: (not _VOLUME.search(n[: -len(SUFFIX)]), n))
    if not made or not all(is_parity(n) and stream_of(n) == stream for n in made):
        raise ColdError(f"par2 made unexpected files for {names.shown(stream)}: {made}")
    fds = [(n, os.open(os.path.join(work, n), os.O_RDONLY | os.O_CLOEXEC)) for n in made]
    try:
        for _name, fd in fds:
            os.fsync(fd)
        found = packets.scan(fds)
    finally:
        for _name, fd in fds:
            os.close(fd)
    if found.damaged_bytes or not found.recovery_blocks or found.slice_size is None:
        raise ColdError(f"the parity par2 made for {names.shown(stream)} does not read back intact")
    return made


def _place(directory: str, work: str, made: list[str]) -> None:
    from zverify.cold.send import fsync_dir

    for name in made:
        target = os.path.join(directory, name)
        if os.path.lexists(target):
            raise ColdError(f"{names.shown(name)} already exists: refusing to overwrite it")
        try:
            os.rename(os.path.join(work, name), target)
        except OSError as err:
            raise ColdError(
                f"renaming {names.shown(name)} into place failed: {err.strerror}"
            ) from None
    try:
        fsync_dir(directory)
    except OSError as err:
        raise ColdError(f"the fsync of {directory} failed: {err.strerror}") from None


def percent_of(parities: list[Parity]) -> int | None:
    """The archive's parity level (the highest of its usable parity): new streams keep it."""
    levels = [p.percent for p in parities if p.usable and p.percent]
    return max(1, round(max(levels))) if levels else None


def protect(directory: str, report: "ArchiveReport", percent: int) -> list[tuple[str, str, str]]:
    """Parity for every stream of the report: (name, status, message), status one of kept
    (intact parity, of any level), added, remade (damaged or foreign parity replaced) or left
    (the stream is not intact: parity is made from proven streams only).  The caller holds
    the archive exclusively.  Raises ColdError when parity cannot be made or removed."""
    done = []
    for f in report.files:
        if f.kind == "partial" or (f.archived is None and names.parse(f.name) is None):
            continue
        done.append((f.name, *_protect_one(directory, f, percent)))
    return done


def _protect_one(directory: str, f: "FileReport", percent: int) -> tuple[str, str]:
    if f.archived is None or f.identity is None:
        return "left", "not intact: parity is made from proven streams only (`cold repair`)"
    if f.parity is not None and not f.parity.problems:
        return "kept", f"{f.parity.percent or 0:.0f}% parity, intact"
    status = "added" if f.parity is None else "remade"
    if f.parity is not None:
        _remove(directory, f.parity.files)
    add(directory, f.name, f.identity, percent)
    return status, f"{percent}% parity"


def _remove(directory: str, files: list[str]) -> None:
    """Old parity files (regular files only: anything else under such a name stays)."""
    from zverify.cold.send import fsync_dir

    for name in files:
        path = os.path.join(directory, name)
        try:
            if os.path.isfile(path) and not os.path.islink(path):
                os.unlink(path)
        except OSError as err:
            raise ColdError(f"removing {names.shown(name)} failed: {err.strerror}") from None
    try:
        fsync_dir(directory)
    except OSError as err:
        raise ColdError(f"the fsync of {directory} failed: {err.strerror}") from None
