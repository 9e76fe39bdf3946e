"""Pairing, written@, encryption roots and holds (zverify.cutover.checks)."""

from zverify.cutover.checks import (
    METADATA_ONLY_MAX,
    Pair,
    Written,
    destination_written,
    encryption,
    pair_datasets,
    source_holds,
    source_written,
)
from zverify.cutover.snapshots import Common
from zverify.zfs.inventory import Dataset, Prop, Snap

COMMON = Common(Snap("s1", 1, 10), Snap("s1", 1, 4))
ROOTS = ("data/images", "newdata/images")


def ds(name: str, **props: str) -> Dataset:
    return Dataset(name, {k: Prop(v, "-") for k, v in props.items()})


def test_datasets_pair_by_path_below_the_tops():
    src = [
        ds("data/images", type="filesystem"),
        ds("data/images/a", type="filesystem"),
        ds("data/images/v", type="volume"),
        ds("data/images/gone", type="filesystem"),
    ]
    dst = [
        ds("newdata/images", type="filesystem"),
        ds("newdata/images/a", type="filesystem"),
        ds("newdata/images/v", type="filesystem"),
        ds("newdata/images/new", type="filesystem"),
    ]
    pairs, found = pair_datasets(src, dst, ROOTS, strict=False)
    assert [(p.rel, p.dst.name if p.dst else None) for p in pairs] == [
        ("", "newdata/images"),
        ("a", "newdata/images/a"),
        ("v", "newdata/images/v"),
        ("gone", None),
    ]
    assert sorted((f.kind, f.severity.value, f.dataset) for f in found) == [
        ("extra-dataset", "warning", "newdata/images/new"),
        ("missing-dataset", "fail", "data/images/gone"),
        ("type-mismatch", "fail", "data/images/v"),
    ]
    _, strict = pair_datasets(src, dst, ROOTS, strict=True)
    assert {f.severity.value for f in strict if f.kind == "extra-dataset"} == {"fail"}


def test_a_replica_changed_only_where_children_were_mounted_is_a_warning():
    mounts = frozenset({"/newdata/images", "/newdata/images/a", "/newdata/images/my dir"})
    changes = ["M\t/newdata/images/", "-\t/newdata/images/a", "+\t/newdata/images/my\\0040dir"]
    [f] = destination_written("data/images", COMMON, Written(14336, changes), mounts)
    assert (f.kind, f.severity.value) == ("destination-modified", "warning")
    [empty] = destination_written("data/images", COMMON, Written(512, []), mounts)
    assert empty.severity.value == "warning" and "no changed path" in empty.message


def test_a_replica_with_a_changed_file_or_an_unknown_change_is_modified():
    edited = Written(4096, ["M\t/newdata/images/", "+\t/newdata/images/report.txt"])
    [f] = destination_written("data/images", COMMON, edited, frozenset({"/newdata/images"}))
    assert f.severity.value == "fail" and "report.txt" in f.message
    [g] = destination_written("data/images", COMMON, Written(4096, "not mounted"), frozenset())
    assert g.severity.value == "fail" and "not mounted" in g.message
    assert destination_written("data/images", COMMON, Written(0, None)) == []


# adversarial-4 M2: a pool import alone makes written@ 1,024 (the objset block rewritten by
# the intent-log claim); that was `source-written`, so a migration with a zvol was never READY.
def test_a_small_written_that_zfs_diff_or_the_bytes_explain_is_metadata_only():
    for w in (Written(1024, []), Written(1024, "a volume has no paths", same_bytes=True)):
        [f] = source_written("olddata/a", COMMON, w)
        assert (f.kind, f.severity.value) == ("source-written", "warning"), f
        assert f.message.startswith("metadata only (written@ 1,024 bytes on the source since @s1")
    [vol] = destination_written("data/vol", COMMON, Written(1024, "no paths", same_bytes=True))
    assert (vol.kind, vol.severity.value) == ("destination-modified", "warning")
    assert "the volume's bytes equal @s1" in vol.message


def test_a_written_that_nothing_explains_or_a_large_one_stays_a_failure():
    for w in (
        Written(1024, ["M\t/olddata/a/f"]),  # a user's write, however small
        Written(1024, "a volume has no paths", same_bytes=False),
        Written(1024, "a volume has no paths", same_bytes="/dev/zvol/x: No such file"),
        Written(1024, None),  # zfs diff not asked
        Written(METADATA_ONLY_MAX + 1, []),
        Written(METADATA_ONLY_MAX + 1, "a volume has no paths", same_bytes=True),
    ):
        [f] = source_written("olddata/a", COMMON, w)
        assert f.severity.value == "fail", w
    [why] = source_written("v", COMMON, Written(1024, "no paths", same_bytes="gone: ENOENT"))
    assert "its bytes could not be compared: gone: ENOENT" in why.message
    [dst] = destination_written("v", COMMON, Written(1024, "no paths", same_bytes=False))
    assert dst.severity.value == "fail"


def enc(name: str, root: str, keystatus: str = "available") -> Dataset:
    return ds(name, encryption="aes-256-gcm", encryptionroot=root, keystatus=keystatus)


def test_encryption_roots_map_into_the_replica():
    same = Pair("a", enc("data/images/a", "data/images"), enc("newdata/images/a", "newdata/images"))
    split = Pair(
        "a", enc("data/images/a", "data/images"), enc("newdata/images/a", "newdata/images/a")
    )
    assert encryption(same, ROOTS, None) == []
    [f] = encryption(split, ROOTS, None)
    assert f.kind == "encryption" and f.details["expected"] == "newdata/images"


def test_an_encryption_root_above_the_tree_may_become_the_replicas_top():
    top = Pair("", enc("data/images", "data"), enc("newdata/images", "newdata/images"))
    child = Pair("a", enc("data/images/a", "data"), enc("newdata/images/a", "newdata/images/a"))
    assert encryption(top, ROOTS, None) == []
    assert [f.kind for f in encryption(child, ROOTS, None)] == ["encryption"]


def test_a_key_that_is_not_loaded_fails_only_when_it_cannot_be_proven():
    locked = Pair(
        "",
        enc("data/images", "data/images"),
        enc("newdata/images", "newdata/images", "unavailable"),
    )
    assert encryption(locked, ROOTS, None) == []  # `zfs load-key -n` proved it
    [f] = encryption(locked, ROOTS, "keylocation=prompt")
    assert "keylocation=prompt" in f.message


def test_held_source_snapshots_are_listed_with_their_tags():
    snaps = [Snap("s1", 1, 10, userrefs=0), Snap("s2", 2, 20, userrefs=2)]
    [f] = source_holds("data/a", snaps, {"s2": ["keep", "zrepl"]})
    assert f.severity.value == "warning" and f.details["holds"] == {"s2": ["keep", "zrepl"]}
    assert source_holds("data/a", snaps[:1], {}) == []
