"""The native line format on its own: bytes <-> ASCII, entry <-> line, bad lines refused."""

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zverify.entry import Entry, Kind
from zverify.manifest.format import LineError, entry_line, owner_fields, parse_entry
from zverify.pathnames import for_manifest as escape
from zverify.pathnames import from_manifest as unescape
from zverify.walk import TreeWalk, WalkOptions

# what a manifest does not carry: inodes (replaced by the group identity on reading), ctimes
# and directories' link counts (never compared)
NOT_CARRIED = ("dev", "ino", "ctime_ns")


@given(st.binary(max_size=300))
def test_escape_round_trips_and_is_printable_ascii(data: bytes) -> None:
    text = escape(data)
    assert unescape(text) == data
    assert text.isascii() and text.isprintable() and '"' not in text
    assert json.loads(json.dumps(text)) == text


@pytest.mark.parametrize("text", ["a\\", "a\\x4", "a\\X41", "a\\n", 'a"b', "caf\u00e9", "a\x01"])
def test_unescape_refuses_what_escape_never_writes(text: str) -> None:
    with pytest.raises(ValueError):
        unescape(text)


def test_every_entry_of_the_rich_tree_round_trips(rich_tree: Path) -> None:
    walk = TreeWalk(rich_tree, WalkOptions(threads=1))
    entries = list(walk)
    walk.close()
    fields = Entry.__match_args__
    for n, entry in enumerate(entries, 1):
        group = 7 if entry.nlink > 1 and entry.kind != Kind.DIR else None
        line = entry_line(entry, group, owner_fields(entry.uid, entry.gid, ("root", "root")))
        assert line.isascii()
        back = parse_entry(json.loads(line), n)
        for name in fields:
            if name not in NOT_CARRIED and not (name == "nlink" and entry.kind == Kind.DIR):
                assert getattr(back, name) == getattr(entry, name), (entry.path, name)
        assert back.ino == (-7 if group else n)


GOOD = {"p": "f", "t": "file", "mode": "0644", "uid": 0, "gid": 0, "mtime": 1, "size": 1,
        "alloc": 0, "nlink": 1, "hash": "00" * 16}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"uid": -1}, "'uid' must be a non-negative integer"),
        ({"size": "1"}, "'size' must be a non-negative integer"),
        ({"mode": "0999"}, "'mode' must be octal"),
        ({"t": "blob"}, "unknown value"),
        ({"hl": 3}, "'hl' needs"),
        ({"data": 2}, "'data' exceeds 'size'"),
        ({"hash": "AB" * 16}, "lower-case hex"),
        ({"xattrs": [["user.b", ""], ["user.a", ""]]}, "sorted by name"),
        ({"error": ["read", 5]}, "'error' must be"),
        ({"changed": "maybe"}, "'changed' must be"),
        ({"p": "a\\q"}, "not an escaped byte string"),
        ({"size": 9, "data": 4, "extents": [[0, 2], [1, 3]]}, "sorted, disjoint"),
        ({"size": 9, "data": 4, "extents": [[0, 2]]}, "add up to 'data'"),
    ],
)
def test_bad_values_are_refused_by_name(change: dict[str, object], message: str) -> None:
    assert parse_entry(GOOD, 1).size == 1
    with pytest.raises(LineError, match=message):
        parse_entry({**GOOD, **change}, 1)


def test_the_hole_map_of_a_sparse_file_is_recorded(rich_tree: Path) -> None:
    walk = TreeWalk(rich_tree, WalkOptions(threads=1))
    sparse = next(e for e in walk if e.path == b"sparse-small")
    walk.close()
    line = json.loads(entry_line(sparse, None, owner_fields(0, 0, None)))
    starts = [start for start, _ in line["extents"]]
    assert starts[0] == 0 and starts[-1] >= (1 << 20) - 4096  # "head" ... "tail"
    assert sum(end - start for start, end in line["extents"]) == line["data"] < line["size"]


def test_a_symlink_needs_its_target() -> None:
    with pytest.raises(LineError, match="without 'link'"):
        parse_entry({**GOOD, "t": "symlink"}, 1)
