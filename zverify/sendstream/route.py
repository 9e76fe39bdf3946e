"""A route through an archive: the files a restore receives, in order, kept as the route it
extends plus one file, so that the routes of one chain share their prefixes
(zverify.sendstream.chain plans them)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload


class Route(Sequence[str]):
    """The files to receive, in order, as the route it extends (parent) and one more file:
    the routes of a chain share their prefixes, so a year of hourly incrementals is 8,760
    links, not 8,760 lists of up to 8,760 names.  Compares and hashes as the tuple of its
    files; indexing and slicing make that tuple."""

    __slots__ = ("_len", "last", "parent")

    def __init__(self, parent: Route | None, last: str) -> None:
        self.parent = parent
        self.last = last
        self._len = 1 + (len(parent) if parent is not None else 0)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[str]:
        return iter(self._files())

    def _files(self) -> tuple[str, ...]:
        names: list[str] = []
        link: Route | None = self
        while link is not None:  # iterative: a route may be thousands of files long
            names.append(link.last)
            link = link.parent
        return tuple(reversed(names))

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if index == -1:
            return self.last
        return self._files()[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Route | tuple):
            return len(self) == len(other) and self._files() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._files())

    def __repr__(self) -> str:
        return f"Route{self._files()!r}"
