"""Pure logic without filesystems: paths, merge-join, hardlink partitions, size algebra."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zverify import _zvcore
from zverify.compare.hardlinks import HardlinkTracker
from zverify.compare.march import OrderError, march
from zverify.compare.policy import ComparePolicy, DiffKind
from zverify.compare.sizes import Explanation, SideTally
from zverify.errors import UsageError
from zverify.pathnames import display, restore, sort_key


def rec(path: bytes, kind: int = _zvcore.KIND_FILE, **kw: object) -> _zvcore.Record:
    fields: dict[str, object] = dict(
        path=path,
        kind=kind,
        mode=0o100644,
        uid=0,
        gid=0,
        nlink=1,
        dev=1,
        ino=hash(path),
        rdev=0,
        size=0,
        alloc=0,
        mtime_ns=0,
        ctime_ns=0,
        data_bytes=0,
        hole_bytes=0,
        link=None,
        xattrs=(),
        digest=b"d" * 16,
        error=None,
        changed=None,
        extents=None,
    )
    fields.update(kw)
    return _zvcore.Record(list(fields.values()))


@given(st.binary(min_size=1).filter(lambda b: b"\0" not in b))
def test_display_restore_round_trip(path: bytes) -> None:
    text, escaped = display(path)
    assert restore(text, escaped) == path
    text.encode("utf-8")  # always valid for JSON


def test_sort_key_is_preorder() -> None:
    paths = [b"a", b"a/b", b"a-b", b"a/b/c", b"a0", b"\xff"]
    assert sorted(paths, key=sort_key) == [b"a", b"a/b", b"a/b/c", b"a-b", b"a0", b"\xff"]


def test_march_pairs_and_one_sided() -> None:
    src = [rec(b""), rec(b"a"), rec(b"a/x"), rec(b"b")]
    dst = [rec(b""), rec(b"a"), rec(b"a-y"), rec(b"b")]
    pairs = [(s.path if s else None, d.path if d else None) for s, d in march(src, dst)]
    assert pairs == [(b"", b""), (b"a", b"a"), (b"a/x", None), (None, b"a-y"), (b"b", b"b")]


def test_march_refuses_unsorted_input() -> None:
    with pytest.raises(OrderError):
        list(march([rec(b"b"), rec(b"a")], []))


def test_hardlink_partitions_split_and_join() -> None:
    t = HardlinkTracker()
    # SRC: {x, y, z} one inode; {p}, {q} separate.  DST: x|y,z split; p,q joined.
    for path, s_ino, d_ino, s_n, d_n in [
        (b"x", 1, 11, 3, 1),
        (b"y", 1, 12, 3, 2),
        (b"z", 1, 12, 3, 2),
        (b"p", 2, 13, 1, 2),
        (b"q", 3, 13, 1, 2),
    ]:
        t.add_pair(rec(path, ino=s_ino, nlink=s_n), rec(path, ino=d_ino, nlink=d_n))
    diffs = t.differences()
    assert [(d.path, d.members, d.kind) for d in diffs] == [
        (b"p", (b"p", b"q"), DiffKind.HARDLINK),
        (b"x", (b"x", b"y", b"z"), DiffKind.HARDLINK),
    ]


def test_policy_profiles_and_ignore() -> None:
    assert DiffKind.XATTR not in ComparePolicy.build("rsync-aH").checked
    assert DiffKind.HARDLINK not in ComparePolicy.build("rsync-a").checked
    assert DiffKind.MODE not in ComparePolicy.build("full", "mode, owner").checked
    assert ComparePolicy.build("full", mtime_window=1.5).mtime_window_ns == 1_500_000_000
    with pytest.raises(UsageError):
        ComparePolicy.build("full", "changed")


sizes = st.integers(min_value=0, max_value=1 << 40)


@given(
    st.lists(st.tuples(sizes, sizes, sizes, sizes, st.booleans(), st.integers(1, 3)), max_size=30),
    st.lists(st.tuples(sizes, sizes), max_size=5),
    st.lists(st.tuples(sizes, sizes), max_size=5),
)
def test_explanation_always_adds_up(
    common: list[tuple[int, int, int, int, bool, int]],
    only_src: list[tuple[int, int]],
    only_dst: list[tuple[int, int]],
) -> None:
    src, dst, ex = SideTally(), SideTally(), Explanation()
    for i, (s_size, s_alloc, d_size, d_alloc, same, links) in enumerate(common):
        s = rec(b"c%d" % i, size=s_size, alloc=s_alloc, nlink=links, ino=i % 4, data_bytes=s_size)
        d = rec(b"c%d" % i, size=d_size, alloc=d_alloc, ino=1000 + i, data_bytes=d_alloc)
        src.add(s)
        dst.add(d)
        ex.add_pair(s, d, same_payload=same and s_size == d_size)
    for side, tally, sign, items in (("s", src, -1, only_src), ("d", dst, 1, only_dst)):
        for i, (size, alloc) in enumerate(items):
            e = rec(b"%s%d" % (side.encode(), i), size=size, alloc=alloc, ino=5000 + i)
            tally.add(e)
            ex.add_only("missing" if sign < 0 else "extra", e, sign)
    ex.finish(src, dst)
    rows = {r["component"]: r for r in ex.rows()}
    assert rows["unexplained"]["apparent_bytes"] == 0
    assert rows["unexplained"]["allocated_bytes"] == 0
    assert sum(int(r["apparent_bytes"]) for r in rows.values()) == (
        dst.du_apparent_bytes - src.du_apparent_bytes
    )
