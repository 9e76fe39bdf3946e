"""Making the parity of an archive's streams (`cold send --parity`, `cold parity`); reading
it is zverify.cold.parity.

Parity is made only from a stream that was proven (`cold send` after the stream validated, `cold
parity` after `cold check` read it completely), in NAME.parity.partial/ (a new directory,
flock()ed while par2 writes: `cold check` sees it in progress and `cold clean` removes it only
when nobody holds it).  The stream must still be the file that was proven when par2 is done;
the files are then renamed into the archive, never over an existing one, the recovery blocks
first and the index last, so that what is there at any moment is usable parity.
"""

import os

from zverify.cold import names, parity
from zverify.cold.entries import FileStamp
from zverify.cold.proof.check import ArchiveReport, FileReport
from zverify.cold.store import workdir
from zverify.errors import ColdError
from zverify.par2 import packets, tool

DEFAULT_PERCENT = 10  # of `cold parity` in an archive without parity: ~10% more space


def add(directory: str, stream: str, proven: FileStamp, percent: int) -> list[str]:
    """Make the parity of the proven stream and rename it into the archive; the names made.
    The caller holds the archive's writers' lock.  Raises ColdError (nothing left behind)."""
    work = os.path.join(directory, stream + names.PARITY_WORK)
    fd = workdir.make(work)
    try:
        source, output = os.path.join(directory, stream), os.path.join(work, stream + parity.SUFFIX)
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


def _still(directory: str, stream: str, proven: FileStamp) -> None:
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
    made = sorted(os.listdir(work), key=lambda n: (not parity.is_volume(n), n))
    if not made or not all(parity.is_parity(n) and parity.stream_of(n) == stream for n in made):
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
        workdir.fsync_dir(directory)
    except OSError as err:
        raise ColdError(f"the fsync of {directory} failed: {err.strerror}") from None


def protect(report: ArchiveReport, percent: int) -> list[tuple[str, str, str]]:
    """Parity for every stream of the report: (name, status, message), status one of kept
    (intact parity, of any level), added, remade (damaged or foreign parity replaced) or left
    (the stream is not intact: parity is made from proven streams only).  The caller holds
    the archive exclusively.  Raises ColdError when parity cannot be made or removed."""
    return [(f.name, *_protect_one(_directory(report, f), f, percent)) for f in _streams(report)]


def planned(report: ArchiveReport, percent: int) -> list[tuple[str, str, str]]:
    """What protect() would do (the same statuses), making nothing."""
    return [(f.name, *_decide(f, percent)) for f in _streams(report)]


def _streams(report: ArchiveReport) -> list[FileReport]:
    """The files parity is for: every stream, and every file named as one."""
    return [
        f
        for f in report.files
        if f.kind != "partial"
        and (f.archived is not None or names.parse(os.path.basename(f.name)) is not None)
    ]


def _directory(report: ArchiveReport, f: FileReport) -> str:
    """The stream's own directory: parity is made there (par2 names files relative to it)."""
    return os.path.dirname(report.path(f.name)) or "."


def _decide(f: FileReport, percent: int) -> tuple[str, str]:
    if f.archived is None or f.identity is None:
        return "left", "not intact: parity is made from proven streams only (`cold repair`)"
    if f.parity is not None and not f.parity.problems:
        return "kept", f"{f.parity.percent or 0:.0f}% parity, intact"
    return ("added" if f.parity is None else "remade"), f"{percent}% parity"


def _protect_one(directory: str, f: FileReport, percent: int) -> tuple[str, str]:
    status, message = _decide(f, percent)
    if status in ("added", "remade"):
        assert f.identity is not None  # a stream proven intact (_decide)
        if f.parity is not None:
            _remove(directory, [os.path.basename(n) for n in f.parity.files])
        add(directory, os.path.basename(f.name), f.identity, percent)
    return status, message


def _remove(directory: str, files: list[str]) -> None:
    """Old parity files (regular files only: anything else under such a name stays)."""
    for name in files:
        path = os.path.join(directory, name)
        try:
            if os.path.isfile(path) and not os.path.islink(path):
                os.unlink(path)
        except OSError as err:
            raise ColdError(f"removing {names.shown(name)} failed: {err.strerror}") from None
    try:
        workdir.fsync_dir(directory)
    except OSError as err:
        raise ColdError(f"the fsync of {directory} failed: {err.strerror}") from None
