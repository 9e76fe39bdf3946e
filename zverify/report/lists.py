"""`--write-lists DIR`: one file of paths per category, written as differences are found.

missing (only in SRC), extra (only in DST), differ (both, but not the same: every other
kind; a hardlink difference lists all its members), differ-dirs (directories whose own
mode, owner, mtime or xattrs differ) and error (could not be read, or changed while being
read).  The files hold the raw byte paths relative to the roots, one per line
(NUL-terminated with --from0), so they can be fed back to `rsync --files-from` or
`zverify compare --files-from`.

A listed directory stands for its whole subtree there (`zverify --files-from`, `rsync -r
--files-from`), which is what a missing, extra, retyped or unlistable directory means, as
in the verdict.  A directory whose only difference is its own metadata does not: in
`differ` it would have the whole subtree checked or copied again (the root's mtime alone
listed `.`), so it goes to differ-dirs, meant for `rsync -a --files-from` without -r,
which sets each directory's attributes and does not descend.

With --detect-moves, `moved` holds each moved file as two lines, its SRC path then its DST
path, so that fed back both ends are checked again (rsync finds no DST path in SRC).

All the files are created up front, so an empty one means "none", not "not written".  A
name holding a newline cannot be one line: without --from0 it ends the run (exit 2, naming
it) rather than be written as two names.
"""

import os
from typing import BinaryIO

from zverify.compare.diffs import Difference
from zverify.compare.policy import DiffKind
from zverify.errors import UsageError
from zverify.pathnames import for_terminal

CATEGORIES = ("missing", "extra", "differ", "differ-dirs", "error")
MOVED = "moved"  # only with --detect-moves: without it, no file was paired
_CATEGORY = {DiffKind.MISSING: "missing", DiffKind.EXTRA: "extra", DiffKind.MOVED: MOVED} | {
    kind: "error" for kind in (DiffKind.ERROR, DiffKind.CHANGED)
}


class ListFiles:
    def __init__(self, directory: str, nul_terminated: bool = False, moves: bool = False) -> None:
        self.directory = directory
        self._end = b"\0" if nul_terminated else b"\n"
        self._files: dict[str, BinaryIO] = {}
        self._last: dict[str, bytes] = {}
        try:
            os.makedirs(directory, exist_ok=True)
            for name in CATEGORIES + (MOVED,) * moves:
                self._files[name] = open(os.path.join(directory, name), "wb")  # noqa: SIM115
        except OSError as err:
            self.close()
            raise UsageError(f"--write-lists {directory!r}: {err.strerror}") from err

    def difference(self, d: Difference) -> None:
        category = _CATEGORY.get(d.kind, "differ-dirs" if d.directory else "differ")
        paths = (d.path, d.moved_to) if d.moved_to is not None else d.members or (d.path,)
        for path in paths:
            if self._last.get(category) == path:
                continue  # one line per path, however many of its attributes differ
            self._last[category] = path
            if self._end == b"\n" and b"\n" in path:
                raise UsageError(
                    f"--write-lists {self.directory!r}: '{for_terminal(path)}' holds a newline, "
                    "which a list of one name per line cannot hold (use --from0)"
                )
            self._files[category].write((path or b".") + self._end)

    def close(self) -> None:
        """Close every file (errors such as a full disk raise OSError)."""
        files, self._files = self._files, {}
        for f in files.values():
            f.close()
