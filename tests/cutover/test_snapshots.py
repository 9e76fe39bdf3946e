"""Snapshot matching by GUID (zverify.cutover.snapshots), on hand-made snapshot lists."""

from zverify.cutover.findings import Severity
from zverify.cutover.snapshots import compare_snapshots
from zverify.zfs.inventory import Snap


def snaps(*spec: tuple[str, int, int]) -> list[Snap]:
    return [Snap(name, guid, txg) for name, guid, txg in spec]


SRC = snaps(("a", 11, 10), ("b", 12, 20), ("c", 13, 30))


def kinds(state):
    return sorted((f.kind, f.severity.value) for f in state.findings)


def test_same_snapshots_have_the_newest_in_common_and_nothing_to_say():
    state = compare_snapshots("p/d", SRC, snaps(("a", 11, 5), ("b", 12, 6), ("c", 13, 7)), False)
    assert state.latest_common is not None and state.latest_common.src.name == "c"
    assert state.behind == [] and state.findings == []


def test_a_renamed_snapshot_is_still_common_because_the_guid_is():
    state = compare_snapshots(
        "p/d", SRC, snaps(("a", 11, 5), ("b", 12, 6), ("renamed", 13, 7)), False
    )
    assert state.latest_common is not None
    assert (state.latest_common.src.name, state.latest_common.dst.name) == ("c", "renamed")
    assert state.findings == []


def test_newer_source_snapshots_make_the_replica_behind():
    state = compare_snapshots("p/d", SRC, snaps(("a", 11, 5)), False)
    assert state.latest_common is not None and state.latest_common.src.name == "a"
    assert [s.name for s in state.behind] == ["b", "c"]
    assert kinds(state) == [("behind", "fail")]
    assert "@b, @c" in state.findings[0].message


def test_same_name_other_guid_is_a_mismatch_and_never_common():
    state = compare_snapshots("p/d", SRC, snaps(("a", 11, 5), ("c", 99, 7)), False)
    assert ("guid-mismatch", "fail") in kinds(state)
    assert state.latest_common is not None and state.latest_common.src.name == "a"
    mismatch = next(f for f in state.findings if f.kind == "guid-mismatch")
    assert mismatch.details["src_guid"] == "13" and mismatch.details["dst_guid"] == "99"


def test_no_common_snapshot_says_whether_the_destination_is_empty():
    empty = compare_snapshots("p/d", SRC, [], False)
    other = compare_snapshots("p/d", SRC, snaps(("x", 77, 3)), False)
    assert kinds(empty) == kinds(other) == [("no-common-snapshot", "fail")]
    assert "no snapshot at all" in empty.findings[0].message
    assert "none of the destination's 1" in other.findings[0].message


def test_a_source_without_snapshots_proves_nothing():
    state = compare_snapshots("p/d", [], snaps(("x", 77, 3)), False)
    assert kinds(state) == [("no-snapshot", "fail")]


def test_destination_only_snapshots_newer_than_common_mean_divergence():
    dst = snaps(("old", 50, 1), ("a", 11, 5), ("b", 12, 6), ("c", 13, 7), ("mine", 60, 9))
    state = compare_snapshots("p/d", SRC, dst, False)
    assert kinds(state) == [("destination-only", "warning"), ("diverged", "fail")]


def test_older_missing_snapshots_warn_unless_all_are_required():
    dst = snaps(("a", 11, 5), ("c", 13, 7))
    assert kinds(compare_snapshots("p/d", SRC, dst, False)) == [("missing-snapshot", "warning")]
    strict = compare_snapshots("p/d", SRC, dst, True)
    assert kinds(strict) == [("missing-snapshot", "fail")]
    assert strict.findings[0].details["snapshots"] == ["b"]
    assert strict.findings[0].severity is Severity.FAIL
