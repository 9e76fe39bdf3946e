"""Errors that end a command, each with the exit code it maps to.

Per-entry problems (an unreadable file, a truncated stream) are not
exceptions: they are values inside a result.  These classes are for what
stops a whole command: a root that cannot be opened, bad options.
"""

from zverify import exitcodes


class ZverifyError(Exception):
    """A failure the user can act on; the CLI prints `str(err)` and exits."""

    exit_code = exitcodes.TROUBLE


class UsageError(ZverifyError):
    """Options that make no sense together or name unknown things."""


class RootError(ZverifyError):
    """SRC or DST cannot be walked at all."""

    def __init__(self, side: str, path: str, reason: str) -> None:
        super().__init__(f"cannot read {side} root {path!r}: {reason}")
        self.side = side
        self.path = path
        self.reason = reason


class SameTreeError(ZverifyError):
    """SRC and DST are one directory: any verdict would be meaningless, and deleting the
    "original" after an IDENTICAL would delete the only copy."""

    def __init__(self, src: str, dst: str) -> None:
        super().__init__(
            f"SRC {src!r} and DST {dst!r} are the same directory (same device and inode): "
            "nothing to compare"
        )


class WalkError(ZverifyError):
    """A walk ended before the whole tree was listed (e.g. out of memory): whatever was
    compared up to there, the tree as a whole was not."""

    def __init__(self, side: str, path: str, reason: str) -> None:
        super().__init__(
            f"{side} walk of {path!r} could not finish: {reason}; nothing was verified"
        )


class ZfsError(ZverifyError):
    """A `zfs`/`zpool` command (or a libzfs_core call) failed: what ran, how, and what it said."""

    def __init__(
        self, argv: list[str], returncode: int | None, stderr: str, errno: int | None = None
    ) -> None:
        if errno is not None:
            status = f"errno {errno}"  # a libzfs_core call
        else:
            status = "could not run" if returncode is None else f"exit {returncode}"
        said = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
        super().__init__(f"`{' '.join(argv)}` failed ({status}): {said}")
        self.argv, self.returncode, self.stderr, self.errno = argv, returncode, stderr, errno


class ArchiveError(ZverifyError):
    """A cold-storage archive directory itself cannot be read."""


class ColdError(ZverifyError):
    """A cold-storage operation could not be carried out (nothing half-done is left)."""


class UnrestorableError(ZverifyError):
    """The archive cannot rebuild what was asked (a damaged file, a gap): a finding about the
    archive, reported with exit 1 before anything was received."""

    exit_code = exitcodes.DIFFERENT


class ManifestError(ZverifyError):
    """A manifest that cannot be trusted: unreadable, damaged, truncated, edited or of an
    unknown version.  Names the file and the line."""

    def __init__(self, path: str, line: int | None, reason: str) -> None:
        where = f"{path}: line {line}" if line is not None else path
        super().__init__(f"manifest {where}: {reason}")
        self.path, self.line, self.reason = path, line, reason
