"""Property drift by value and by source (zverify.cutover.properties)."""

from zverify.cutover.properties import compare_properties
from zverify.zfs.inventory import Dataset, Prop


def ds(name: str, **props: tuple[str, str]) -> Dataset:
    return Dataset(name, {k.replace("__", ":"): Prop(*v) for k, v in props.items()})


SRC_TOP = ds("data/images", mountpoint=("/data/images", "inherited from data"))
DST_TOP = ds("newdata/images", mountpoint=("/newdata/images", "inherited from newdata"))
TOPS = (SRC_TOP, DST_TOP)


def found(src, dst, expect=None):
    return [
        (f.kind, f.severity.value, f.details["property"])
        for f in compare_properties(src, dst, TOPS, expect or {})
    ]


def test_compression_inherited_from_the_old_pool_and_lost_is_drift():
    src = ds("data/images/a", compression=("lz4", "inherited from data"))
    dst = ds("newdata/images/a", compression=("off", "default"))
    assert found(src, dst) == [("property-drift", "fail", "compression")]


def test_an_expected_value_is_not_drift_and_notes_that_old_blocks_stay():
    src = ds("data/images/a", compression=("lz4", "inherited from data"))
    dst = ds("newdata/images/a", compression=("zstd", "local"))
    assert found(src, dst, {"compression": "zstd"}) == [("not-rewritten", "note", "compression")]
    assert found(src, dst, {"compression": "gzip"}) == [("property-drift", "fail", "compression")]


def test_local_on_the_source_and_received_on_the_replica_is_the_normal_send_p():
    src = ds("data/vol", volsize=("16777216", "local"))
    dst = ds("newdata/vol", volsize=("16777216", "received"))
    assert found(src, dst) == []


def test_same_value_from_another_kind_of_source_is_a_warning():
    src = ds("data/images/a", atime=("off", "local"))
    dst = ds("newdata/images/a", atime=("off", "inherited from newdata"))
    assert found(src, dst) == [("property-origin", "warning", "atime")]


def test_inherited_mountpoints_compare_below_the_tops():
    src = ds("data/images/a", mountpoint=("/data/images/a", "inherited from data"))
    dst = ds("newdata/images/a", mountpoint=("/newdata/images/a", "inherited from newdata"))
    moved = ds("newdata/images/a", mountpoint=("/srv/a", "local"))
    assert found(src, dst) == []
    assert found(SRC_TOP, DST_TOP) == []
    assert found(src, moved) == [("property-drift", "fail", "mountpoint")]


def test_user_properties_are_compared_and_one_only_on_the_replica_warns():
    src = ds("data/a", com__example__owner=("ops", "local"))
    lost = ds("newdata/a")
    extra = ds(
        "newdata/a", com__example__owner=("ops", "received"), zrepl__placeholder=("on", "local")
    )
    assert found(src, lost) == [("property-drift", "fail", "com:example:owner")]
    assert found(src, extra) == [("property-drift", "warning", "zrepl:placeholder")]


def test_read_only_properties_without_a_source_do_not_warn_about_origin():
    src = ds("data/vol", volblocksize=("8192", "default"))
    dst = ds("newdata/vol", volblocksize=("8192", "-"))
    assert found(src, dst) == []


def test_default_mountpoints_follow_the_pool_like_inherited_ones():
    src_top = ds("zsrc/ds", mountpoint=("/zsrc/ds", "default"))
    dst_top = ds("zdst/ds", mountpoint=("/zdst/ds", "inherited from zdst"))
    child = ds("zsrc/ds/c", mountpoint=("/zsrc/ds/c", "default"))
    replica = ds("zdst/ds/c", mountpoint=("/zdst/ds/c", "inherited from zdst"))
    tops = (src_top, dst_top)
    assert compare_properties(src_top, dst_top, tops, {}) == []
    assert compare_properties(child, replica, tops, {}) == []


def test_a_temporary_value_is_how_the_pool_is_imported_not_drift():
    """`zpool import -o readonly=on data olddata`: every dataset of the old pool shows
    readonly=on (temporary); the copy must not be read-only, and is not drift."""
    src = ds("olddata/home", readonly=("on", "temporary"), atime=("off", "local"))
    dst = ds("data/home", readonly=("off", "default"), atime=("on", "local"))
    assert found(src, dst) == [("property-drift", "fail", "atime")]
