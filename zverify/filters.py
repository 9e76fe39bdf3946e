"""Filters: which paths `compare` and `manifest` leave out, applied the same way to both sides.

The user's --exclude/--include patterns, --exclude-from files and a --files-from list become
one Filter (the rules, as bytes) and one C filter (native/src/zv_filter.c) that the walkers
prune with: an excluded directory is never entered.  A manifest side gets the very same
decision from the same C code (filtered()).  What was left out is counted, per side, and is
part of the verdict: a filter may narrow what is compared, never hide that it did.
"""

import functools
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from zverify import _zvcore
from zverify.entry import Entry, Kind
from zverify.errors import UsageError
from zverify.manifest.escape import escape, unescape

INCLUDE, EXCLUDE = "+", "-"
COMMENT_STARTS = (b"#", b";")


@dataclass(frozen=True)
class Filter:
    """The rules in the order given, each (INCLUDE or EXCLUDE, pattern), and the --files-from
    paths (None: no list).  Every --include wins over every --exclude, whatever the order."""

    rules: tuple[tuple[str, bytes], ...] = ()
    listed: tuple[bytes, ...] | None = None
    listed_from: str | None = None  # the --files-from file, for the report

    @property
    def active(self) -> bool:
        return bool(self.rules) or self.listed is not None

    @functools.cached_property
    def _compiled(self) -> "_zvcore.Filter | None":
        """Built once (a --files-from list is sorted in it) and shared by both walks and
        any manifest side: the C filter is read-only.  ValueError(index, why) for a bad
        pattern (build() and from_json() turn it into their own error first)."""
        if not self.active:
            return None
        rules = [(kind == INCLUDE, pattern) for kind, pattern in self.rules]
        return _zvcore.Filter(rules, self.listed)

    def compiled(self) -> "_zvcore.Filter | None":
        """The C filter, or None when nothing is filtered."""
        return self._compiled

    def patterns(self) -> list[str]:
        """The rules as rsync would print them: '- PATTERN' / '+ PATTERN'."""
        return [f"{kind} {os.fsdecode(pattern)}" for kind, pattern in self.rules]

    def to_json(self) -> dict[str, object]:
        """For a manifest header: enough to apply the same filter when comparing to it."""
        listed = None if self.listed is None else [escape(p) for p in self.listed]
        return {"rules": [[k, escape(p)] for k, p in self.rules], "listed": listed}

    @classmethod
    def from_json(cls, obj: dict[str, object], where: str) -> "Filter":
        raw_rules, raw_listed = obj["rules"], obj["listed"]
        if not isinstance(raw_rules, list) or not isinstance(raw_listed, list | None):
            raise ValueError("filter: rules must be a list, listed a list or null")
        rules = tuple((str(k), unescape(str(p))) for k, p in raw_rules)
        listed = None if raw_listed is None else tuple(unescape(str(p)) for p in raw_listed)
        found = cls(rules, listed, where)
        try:
            _check(found)
        except UsageError as err:
            raise ValueError(str(err)) from None
        return found


def build(
    excludes: Iterable[str] = (),
    includes: Iterable[str] = (),
    exclude_from: Iterable[str] = (),
    files_from: str | None = None,
    from0: bool = False,
) -> Filter:
    """The filter the options describe; UsageError naming the bad pattern, file or line."""
    rules = [(INCLUDE, os.fsencode(p)) for p in includes]
    rules += [(EXCLUDE, os.fsencode(p)) for p in excludes]
    for path in exclude_from:
        rules += _rules_file(path)
    if from0 and files_from is None:
        raise UsageError("--from0 applies to --files-from, which was not given")
    listed = None if files_from is None else _files_list(files_from, from0)
    found = Filter(tuple(rules), listed, files_from)
    _check(found)
    return found


def _check(found: Filter) -> None:
    """Compile found now, so that a bad pattern is a UsageError naming it."""
    try:
        found.compiled()
    except ValueError as err:
        index, why = err.args
        kind, pattern = found.rules[index]
        option = "--include" if kind == INCLUDE else "--exclude"
        raise UsageError(f"{option} {os.fsdecode(pattern)!r}: not a pattern ({why})") from None


def _read(path: str, option: str) -> bytes:
    try:
        if path == "-":
            return sys.stdin.buffer.read()
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise UsageError(f"{option} {path!r}: {err.strerror or err}") from None


def _rules_file(path: str) -> list[tuple[str, bytes]]:
    """rsync's --exclude-from: one pattern per line, '+ ' / '- ' prefixes allowed, blank
    lines and lines starting with '#' or ';' skipped."""
    rules = []
    for line in _read(path, "--exclude-from").splitlines():
        if not line.strip() or line.startswith(COMMENT_STARTS):
            continue
        if line[:2] in (b"+ ", b"- "):
            rules.append((line[:1].decode(), line[2:]))
        else:
            rules.append((EXCLUDE, line))
    return rules


def _files_list(path: str, from0: bool) -> tuple[bytes, ...] | None:
    """--files-from: paths relative to the root (a leading '/' or './' is dropped), one per
    line or NUL-separated with --from0.  None when the list names the root itself."""
    data = _read(path, "--files-from")
    listed = []
    for number, raw in enumerate(data.split(b"\0" if from0 else b"\n"), 1):
        line = raw if from0 else raw.removesuffix(b"\r")
        if not line:
            continue
        parts = [p for p in line.split(b"/") if p not in (b"", b".")]
        if b".." in parts:
            raise UsageError(f"--files-from {path!r} line {number}: '..' is not allowed")
        if not parts:
            return None  # the root: everything is listed
        listed.append(b"/".join(parts))
    return tuple(listed)


def filtered(
    entries: Iterable[Entry], compiled: "_zvcore.Filter", counter: list[int]
) -> Iterator[Entry]:
    """entries (canonical order) without those the filter leaves out, nor anything below an
    excluded directory, whether or not that directory is among the entries (checkfile
    formats list files only); counter[0] counts what was left out as the walker does."""
    open_dirs: list[tuple[bytes, bool]] = []  # ancestors of the current entry: (path, excluded)
    for entry in entries:
        path = entry.path
        if not path:
            yield entry  # the root is always compared
            continue
        while open_dirs and not path.startswith(open_dirs[-1][0] + b"/"):
            open_dirs.pop()
        if open_dirs and open_dirs[-1][1]:
            continue  # below an excluded directory: never listed, not counted
        if _unlisted_ancestor_excluded(path, open_dirs, compiled):
            counter[0] += 1
            continue
        is_dir = entry.kind == Kind.DIR
        excluded = compiled.excludes(path, is_dir)
        if is_dir:
            open_dirs.append((path, excluded))
        if excluded:
            counter[0] += 1
        else:
            yield entry


def _unlisted_ancestor_excluded(
    path: bytes, open_dirs: list[tuple[bytes, bool]], compiled: "_zvcore.Filter"
) -> bool:
    """Judge the directories between the deepest open one and path (a listing without
    directories skips them) and open them; True when one of them is excluded."""
    start = len(open_dirs[-1][0]) + 1 if open_dirs else 0
    cut = path.find(b"/", start)
    while cut >= 0:
        ancestor = path[:cut]
        excluded = compiled.excludes(ancestor, True)
        open_dirs.append((ancestor, excluded))
        if excluded:
            return True
        cut = path.find(b"/", cut + 1)
    return False
