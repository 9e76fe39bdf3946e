"""Filters: which paths `compare` and `manifest` leave out, applied the same way to both sides.

The user's --include/--exclude patterns and --exclude-from files, in the order given, and a
--files-from list become one Filter (the rules, as bytes) and one C filter
(native/src/zv_filter.c) that the walkers prune with: an excluded directory is never
entered.  The rules mean what rsync makes of the same options (the first rule that matches
decides; tests/compare/test_filters_rsync.py holds zverify to rsync itself), and what rsync
would read as filter-rule syntax zverify does not have is refused, never guessed.  A
manifest side gets the very same decision from the same C code (filtered()).  What was left
out is counted, per side, and is part of the verdict: a filter may narrow what is compared,
never hide that it did; a --files-from path found in neither tree makes it INCOMPLETE.
"""

import functools
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from zverify import _zvcore
from zverify.entry import Entry, Kind
from zverify.errors import UsageError
from zverify.pathnames import for_manifest, from_manifest

INCLUDE, EXCLUDE = "+", "-"
COMMENT_STARTS = (b"#", b";")
CLEAR = b"!"  # rsync: forget the rules given so far
# The value of a manifest header's "order": its rules are rsync's, the first match decides.
# A header without it was written when every include won over every exclude.
FIRST_MATCH = "first-match"

# What rsync's --filter would read as rule syntax that --include/--exclude/--exclude-from
# read as a plain name (modifiers, merge files, -C, '!' negation, long rule names): the user
# meant one or the other, and zverify will not guess which.  Compiled by re when a rule is
# first read (and kept in its cache), not at import: a run without rules never needs it.
_RULE_SYNTAX = (
    rb"[-+],|[-+][/!Csrpxenw]+[ _]|[-+]_|[-+]C\Z|[.:][-+Cenw,]* |![^\n]"
    rb"|(exclude|include|merge|dir-merge|hide|show|protect|risk)(,\S*)? |clear\Z"
    rb"|[HSPR],"
)


@dataclass(frozen=True)
class Filter:
    """The rules in the order given, each (INCLUDE or EXCLUDE, pattern), the first that
    matches deciding as in rsync, and the --files-from paths (None: no list)."""

    rules: tuple[tuple[str, bytes], ...] = ()
    listed: tuple[bytes, ...] | None = None
    listed_from: str | None = None  # the --files-from file, for the report

    @property
    def active(self) -> bool:
        return bool(self.rules) or self.listed is not None

    @functools.cached_property
    def _compiled(self) -> "_zvcore.Filter | None":
        """Built once (a --files-from list is sorted in it) and shared by both walks and
        any manifest side: the C filter is read-only but for the listed paths it met.
        ValueError(index, why) for a bad pattern (build() and from_json() turn it into
        their own error first)."""
        if not self.active:
            return None
        rules = [(kind == INCLUDE, pattern) for kind, pattern in self.rules]
        return _zvcore.Filter(rules, self.listed)

    def compiled(self) -> "_zvcore.Filter | None":
        """The C filter, or None when nothing is filtered."""
        return self._compiled

    def unseen(self) -> list[bytes]:
        """The --files-from paths no walk (nor manifest side) met so far: after a compare,
        those in neither tree."""
        compiled = self.compiled()
        return [] if self.listed is None or compiled is None else compiled.unseen()

    def patterns(self) -> list[str]:
        """The rules as rsync would print them: '- PATTERN' / '+ PATTERN'."""
        return [f"{kind} {os.fsdecode(pattern)}" for kind, pattern in self.rules]

    def to_json(self) -> dict[str, object]:
        """For a manifest header: enough to apply the same filter when comparing to it."""
        listed = None if self.listed is None else [for_manifest(p) for p in self.listed]
        rules = [[k, for_manifest(p)] for k, p in self.rules]
        return {"rules": rules, "listed": listed, "order": FIRST_MATCH}

    @classmethod
    def from_json(cls, obj: dict[str, object], where: str) -> "Filter":
        raw_rules, raw_listed = obj["rules"], obj["listed"]
        if not isinstance(raw_rules, list) or not isinstance(raw_listed, list | None):
            raise ValueError("filter: rules must be a list, listed a list or null")
        rules = tuple(_json_rule(rule) for rule in raw_rules)
        if obj.get("order") != FIRST_MATCH:
            rules = _legacy(rules, obj.get("order"))
        listed = None if raw_listed is None else tuple(from_manifest(str(p)) for p in raw_listed)
        found = cls(rules, listed, where)
        try:
            _check(found)
        except UsageError as err:
            raise ValueError(str(err)) from None
        return found


def _json_rule(rule: object) -> tuple[str, bytes]:
    if not isinstance(rule, list) or len(rule) != 2 or rule[0] not in (INCLUDE, EXCLUDE):
        raise ValueError(f"filter: a rule must be ['+' or '-', pattern], not {rule!r}")
    return rule[0], from_manifest(str(rule[1]))


def _legacy(rules: tuple[tuple[str, bytes], ...], order: object) -> tuple[tuple[str, bytes], ...]:
    """The rules of a header written when every include won over every exclude: the same
    decisions in first-match order (the includes first), if no pattern's meaning changed
    since (a backslash without wildcards, '***', a leading '**', [:classes:])."""
    if order is not None:
        raise ValueError(f"filter: unknown rule order {order!r}")
    for _, pattern in rules:
        if b"\\" in pattern or b"***" in pattern or pattern.startswith(b"**") or b"[:" in pattern:
            raise ValueError(
                f"filter: the pattern {os.fsdecode(pattern)!r} was recorded by an older zverify "
                "that read it differently: write the manifest again"
            )
    return tuple(r for r in rules if r[0] == INCLUDE) + tuple(r for r in rules if r[0] == EXCLUDE)


# The options that give rules, in the order click saw them (zverify.cli.filtering).
RULE_OPTIONS = ("--include", "--exclude", "--exclude-from")


def build(
    given: Iterable[tuple[str, str]] = (),
    files_from: str | None = None,
    from0: bool = False,
) -> Filter:
    """The filter the options describe: given holds (option, value) pairs, option one of
    RULE_OPTIONS, in command-line order; from0 makes --files-from and --exclude-from files
    NUL-separated.  UsageError naming the bad pattern, file or line."""
    rules: list[tuple[str, bytes]] = []
    for option, value in given:
        if option == "--exclude-from":
            lines = _rules_file(value, from0)
        else:
            lines = [(f"{option} {value!r}", os.fsencode(value))]
        for where, line in lines:
            default = INCLUDE if option == "--include" else EXCLUDE
            _add_rule(rules, where, line, default)
    listed = None if files_from is None else _files_list(files_from, from0)
    found = Filter(tuple(rules), listed, files_from)
    _check(found)
    return found


def _add_rule(rules: list[tuple[str, bytes]], where: str, text: bytes, default: str) -> None:
    """One --include/--exclude value or --exclude-from line, read as rsync reads them: '!'
    clears the rules so far, a '+ ' or '- ' prefix sets the kind; anything else is a
    pattern, unless it looks like filter-rule syntax rsync would read differently."""
    if text == CLEAR:
        rules.clear()
        return
    kind = default
    if text[:2] in (b"+ ", b"- "):
        kind, text = text[:1].decode(), text[2:]
        if not text:
            raise UsageError(f"{where}: a rule with no pattern")
    elif re.match(_RULE_SYNTAX, text):
        raise UsageError(
            f"{where}: rsync filter-rule syntax (modifiers, merge files, -C, '!' negation) is "
            "not supported, and zverify will not guess; to match such a name, put one of its "
            "characters in a class, e.g. '[-]s name'"
        )
    rules.append((kind, text))


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


def _rules_file(path: str, from0: bool) -> list[tuple[str, bytes]]:
    """rsync's --exclude-from: one rule per line (NUL-separated with --from0), blank ones
    and those starting with '#' or ';' skipped (with --from0 too, as rsync does); each
    (where, rule) for _add_rule."""
    rules = []
    data = _read(path, "--exclude-from")
    lines = data.split(b"\0") if from0 else data.splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith(COMMENT_STARTS):
            continue
        rules.append((f"--exclude-from {path!r} line {number}", line))
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
