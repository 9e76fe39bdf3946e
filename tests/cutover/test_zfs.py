"""`zverify cutover` on real OpenZFS: the two-window migration of issue 9 replayed with
Debian's syncoid (`data` -> `newdata`, lz4 inherited from the pool roots, children and a
volume), and every way a replica falls short of READY made for real: a write on either
side, a missing child, a pool root without compression, renamed and clashing snapshots,
an interrupted `zfs receive -s`, a raw-sent encrypted dataset, and blocks damaged on the
replica's disk that only --content can see.

Every case asserts the exact failing findings and the exit code of the installed command,
then puts the replica back and asserts READY again, so the cases do not lean on each other.
"""

from __future__ import annotations

import json
import shlex

import pytest

pytestmark = pytest.mark.zfs

IMAGES = ("data/images", "newdata/images")
FAILING = ("fail", "unverified")


def sh(host, script: str, check: bool = True):
    r = host.run(["sh", "-c", script], timeout=900)
    assert not check or r.returncode == 0, f"{script}\n{r.stdout}\n{r.stderr[-2000:]}"
    return r


def cutover(host, zverify, *args: str, expect: int):
    """Run `zverify cutover --json ARGS`, assert its exit code, return the document."""
    r = host.run([*zverify, "cutover", "--json", "-q", *args], timeout=900)
    assert r.returncode == expect, f"exit {r.returncode}\n{r.stdout[-6000:]}\n{r.stderr[-2000:]}"
    return json.loads(r.stdout)


def failing(doc) -> set[tuple[str, str]]:
    return {(f["kind"], f["dataset"]) for f in doc["findings"] if f["severity"] in FAILING}


def of_kind(doc, kind: str) -> list[dict]:
    return [f for f in doc["findings"] if f["kind"] == kind]


def latest(host, dataset: str) -> str:
    out = sh(host, f"zfs list -H -o name -t snapshot -s createtxg -d 1 {dataset} | tail -n 1")
    return out.stdout.strip().partition("@")[2]


def syncoid(host, src: str, dst: str, *options: str) -> None:
    sh(host, f"syncoid -r {' '.join(options)} {src} {dst}")


def assert_ready(host, zverify, src: str = IMAGES[0], dst: str = IMAGES[1]):
    doc = cutover(host, zverify, "-r", src, dst, expect=0)
    assert doc["ready"] is True and failing(doc) == set()
    return doc


@pytest.fixture(scope="module")
def pools(zfs_host, zverify_in_zfs_host):
    """`data` and `newdata`, both created with compression=lz4 at the root (inherited
    below), and the source tree: images/{a,b,vol}, backup/x."""
    host = zfs_host
    for name, dev in (("data", 0), ("newdata", 1)):
        sh(
            host,
            f"zpool create -f -O compression=lz4 -O mountpoint=/{name} {name} "
            f"{host.scratch_devices[dev]}",
        )
    sh(
        host,
        "zfs create data/images && zfs create data/images/a && zfs create data/images/b "
        "&& zfs create -V 16M data/images/vol && zfs create -p data/backup/x",
    )
    sh(
        host,
        "head -c 600K /dev/urandom > /data/images/a/photo && echo notes > /data/images/b/t "
        "&& head -c 300K /dev/urandom > /data/backup/x/db "
        "&& dd if=/dev/urandom of=/dev/zvol/data/images/vol bs=64K count=16 2>/dev/null "
        "&& zfs snapshot -r data@first",
    )
    yield host
    sh(host, "zpool destroy -f newdata; zpool destroy -f data", check=False)


@pytest.fixture(scope="module")
def migrated(pools, zverify_in_zfs_host):
    """The seed migration, window 1 (live) then window 2 (writers stopped), with the checks
    a migration script makes between them."""
    host, zverify = pools, zverify_in_zfs_host
    syncoid(host, "data/images", "newdata/images")
    syncoid(host, "data/backup", "newdata/backup")
    sh(host, "echo 'written after pass 1' > /data/images/a/late")
    after_write = cutover(host, zverify, "-r", "--explain", *IMAGES, expect=1)
    sh(host, "zfs snapshot data/images/a@hourly")
    after_snapshot = cutover(host, zverify, "-r", *IMAGES, expect=1)
    syncoid(host, "data/images", "newdata/images")
    syncoid(host, "data/backup", "newdata/backup")
    return host, zverify, after_write, after_snapshot


def test_window_one_leaves_the_replica_not_ready_with_the_written_bytes(migrated):
    _, _, after_write, after_snapshot = migrated
    assert failing(after_write) == {("source-written", "data/images/a")}
    written = of_kind(after_write, "source-written")[0]
    assert written["bytes"] > 0 and "/data/images/a/late" in " ".join(written["changes"])
    assert failing(after_snapshot) == {
        ("source-written", "data/images/a"),
        ("behind", "data/images/a"),
    }
    assert of_kind(after_snapshot, "behind")[0]["snapshots"] == ["hourly"]


def test_mounting_the_children_on_the_replica_is_only_a_warning(migrated):
    _, _, after_write, _ = migrated
    top = [f for f in of_kind(after_write, "destination-modified") if f["dataset"] == IMAGES[0]]
    # the receive of newdata/images and the mounts of its children changed its directory
    assert top and top[0]["severity"] == "warning", after_write["findings"]
    assert "mount points only" in top[0]["message"]


def test_window_two_is_ready_and_its_content_reads_back(migrated):
    host, zverify, _, _ = migrated
    doc = assert_ready(host, zverify)
    names = {d["src"]: d for d in doc["datasets"]}
    assert set(names) == {"data/images", "data/images/a", "data/images/b", "data/images/vol"}
    for src, d in names.items():
        want_guid = sh(host, f"zfs get -Hp -o value guid {src}@{d['latest_common']['name']}")
        assert d["latest_common"]["guid"] == want_guid.stdout.strip()
        assert (d["behind"], d["src_written"], d["dst_written"]) == (0, 0, 0)
    assert_ready(host, zverify, "data/backup", "newdata/backup")
    content = cutover(host, zverify, "-r", "--content", *IMAGES, expect=0)
    assert content["content"] is True and failing(content) == set()
    text = host.run([*zverify, "cutover", "-r", *IMAGES], timeout=600)
    assert text.returncode == 0 and "READY: the replica is complete" in text.stdout


def test_a_write_on_the_replica_is_destination_modified(migrated):
    host, zverify, _, _ = migrated
    sh(host, "echo edited > /newdata/images/b/edited-on-replica")
    doc = cutover(host, zverify, "-r", *IMAGES, expect=1)
    assert failing(doc) == {("destination-modified", "data/images/b")}
    assert "edited-on-replica" in of_kind(doc, "destination-modified")[0]["message"]
    sh(host, f"zfs rollback newdata/images/b@{shlex.quote(latest(host, 'newdata/images/b'))}")
    assert_ready(host, zverify)


def test_a_missing_child_is_missing_dataset(migrated):
    host, zverify, _, _ = migrated
    sh(host, "zfs rename newdata/backup/x newdata/x-aside")
    try:
        doc = cutover(host, zverify, "-r", "data/backup", "newdata/backup", expect=1)
    finally:
        sh(host, "zfs rename newdata/x-aside newdata/backup/x")
    # unmounting x removed its mount directory from the replica's parent: a real change
    # there, since no child is mounted on it any more
    assert failing(doc) == {
        ("missing-dataset", "data/backup/x"),
        ("destination-modified", "data/backup"),
    }
    assert "/newdata/backup/x" in of_kind(doc, "destination-modified")[0]["message"]
    assert_ready(host, zverify, "data/backup", "newdata/backup")


def test_a_pool_root_without_compression_is_property_drift_unless_expected(migrated):
    host, zverify, _, _ = migrated
    sh(host, "zfs set compression=off newdata")
    try:
        doc = cutover(host, zverify, "-r", *IMAGES, expect=1)
        every = {"data/images", "data/images/a", "data/images/b", "data/images/vol"}
        assert failing(doc) == {("property-drift", d) for d in every}
        drift = of_kind(doc, "property-drift")[0]
        assert drift["src"] == {"value": "lz4", "source": "inherited from data"}
        assert drift["dst"] == {"value": "off", "source": "inherited from newdata"}
        expected = cutover(host, zverify, "-r", "--expect", "compression=off", *IMAGES, expect=0)
        assert {f["dataset"] for f in of_kind(expected, "not-rewritten")} == every
    finally:
        sh(host, "zfs set compression=lz4 newdata")
    assert_ready(host, zverify)


def test_a_snapshot_renamed_on_the_replica_still_counts_as_common(migrated):
    host, zverify, _, _ = migrated
    name = latest(host, "newdata/images/a")
    sh(host, f"zfs rename 'newdata/images/a@{name}' newdata/images/a@renamed")
    try:
        doc = assert_ready(host, zverify)
        a = next(d for d in doc["datasets"] if d["src"] == "data/images/a")
        assert a["latest_common"]["name"] == name
        assert a["latest_common"]["dst_name"] == "renamed"
    finally:
        sh(host, f"zfs rename newdata/images/a@renamed 'newdata/images/a@{name}'")


def test_the_same_name_with_another_guid_is_a_mismatch(migrated):
    host, zverify, _, _ = migrated
    sh(host, "zfs snapshot data/images/b@clash && zfs snapshot newdata/images/b@clash")
    try:
        doc = cutover(host, zverify, "-r", *IMAGES, expect=1)
        b = "data/images/b"
        assert failing(doc) == {("guid-mismatch", b), ("behind", b), ("diverged", b)}
        mismatch = of_kind(doc, "guid-mismatch")[0]
        for side, prefix in (("src_guid", "data"), ("dst_guid", "newdata")):
            guid = sh(host, f"zfs get -Hp -o value guid {prefix}/images/b@clash").stdout.strip()
            assert mismatch[side] == guid
    finally:
        sh(host, "zfs destroy data/images/b@clash && zfs destroy newdata/images/b@clash")
    assert_ready(host, zverify)


def test_an_interrupted_resumable_receive_is_incomplete_receive(migrated):
    host, zverify, _, _ = migrated
    base = latest(host, "data/backup/x")
    sh(host, "head -c 4M /dev/urandom > /data/backup/x/big && zfs snapshot data/backup/x@big")
    sh(
        host,
        f"zfs send -i 'data/backup/x@{base}' data/backup/x@big | head -c 1500000 "
        "| zfs receive -s newdata/backup/x",
        check=False,
    )
    try:
        doc = cutover(host, zverify, "-r", "data/backup", "newdata/backup", expect=1)
        x = "data/backup/x"
        assert failing(doc) == {("incomplete-receive", x), ("behind", x), ("source-written", x)}
    finally:
        sh(
            host,
            f"zfs receive -A newdata/backup/x; zfs destroy data/backup/x@big; "
            f"zfs rollback 'data/backup/x@{base}'",
        )
    assert_ready(host, zverify, "data/backup", "newdata/backup")


def test_a_raw_sent_encrypted_dataset_is_ready_only_once_its_key_opens(migrated):
    host, zverify, _, _ = migrated
    key = "/root/cutover.key"
    sh(host, f"head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > {key}; echo >> {key}")
    sh(
        host,
        f"zfs create -o encryption=aes-256-gcm -o keyformat=hex -o keylocation=file://{key} "
        "data/secret && echo secret > /data/secret/s && zfs snapshot data/secret@one",
    )
    syncoid(host, "data/secret", "newdata/secret", "--sendoptions=w")
    locked = cutover(host, zverify, "data/secret", "newdata/secret", expect=1)
    assert failing(locked) == {("encryption", "data/secret")}
    assert "keylocation=prompt" in of_kind(locked, "encryption")[0]["message"]
    sh(host, f"zfs load-key -L file://{key} newdata/secret")
    opened = cutover(host, zverify, "--content", "data/secret", "newdata/secret", expect=0)
    assert failing(opened) == set()


def test_extra_datasets_warn_unless_strict_and_holds_are_reported(migrated):
    host, zverify, _, _ = migrated
    snap = latest(host, "data/images/a")
    sh(host, f"zfs create newdata/images/extra && zfs hold keep 'data/images/a@{snap}'")
    try:
        doc = cutover(host, zverify, "-r", *IMAGES, expect=0)
        assert [f["severity"] for f in of_kind(doc, "extra-dataset")] == ["warning"]
        assert of_kind(doc, "source-hold")[0]["holds"] == {snap: ["keep"]}
        strict = cutover(host, zverify, "-r", "--strict", *IMAGES, expect=1)
        assert failing(strict) == {("extra-dataset", "newdata/images/extra")}
    finally:
        sh(host, f"zfs destroy newdata/images/extra; zfs release keep 'data/images/a@{snap}'")
    assert_ready(host, zverify)


def test_a_dataset_that_does_not_exist_is_exit_2_in_one_line(migrated):
    host, zverify, _, _ = migrated
    r = host.run([*zverify, "cutover", "data/nope", "newdata/images"], timeout=300)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "data/nope" in r.stderr


DAMAGE = r"""
import mmap, sys
path, marker = sys.argv[1], bytes.fromhex(sys.argv[2])
with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
    at = m.find(marker)
    assert at >= 0 and m.find(marker, at + 1) < 0, "marker not found exactly once"
    m[at:at + 4096] = bytes(4096)
print(at)
"""


def test_content_finds_blocks_damaged_on_the_replicas_disk(zfs_host, zverify_in_zfs_host):
    """Equal GUIDs, nothing written: READY without --content.  A 4 KiB block of the replica's
    vdev overwritten under one file: only reading it back can tell, and it is an error."""
    host, zverify = zfs_host, zverify_in_zfs_host
    sh(
        host,
        "truncate -s 256M /root/zsrc.img /root/zdst.img && "
        "zpool create -f zsrc /root/zsrc.img && zpool create -f zdst /root/zdst.img",
    )
    try:
        sh(
            host,
            "zfs create zsrc/ds && head -c 256K /dev/urandom > /zsrc/ds/victim && "
            "echo fine > /zsrc/ds/fine && zfs snapshot zsrc/ds@s && "
            "zfs send zsrc/ds@s | zfs receive zdst/ds && zpool sync",
        )
        victim = "/zsrc/ds/.zfs/snapshot/s/victim"  # reading the live file would write its atime
        marker = sh(host, f"head -c 64 {victim} | od -An -tx1 | tr -d ' \\n'").stdout
        assert cutover(host, zverify, "zsrc/ds", "zdst/ds", expect=0)["ready"]
        sh(host, "zpool export zdst")
        host.run(["python3", "-c", DAMAGE, "/root/zdst.img", marker.strip()], check=True)
        sh(host, "zpool import -d /root zdst")
        assert cutover(host, zverify, "zsrc/ds", "zdst/ds", expect=0)["ready"]
        doc = cutover(host, zverify, "--content", "zsrc/ds", "zdst/ds", expect=2)
        assert failing(doc) == {("content-error", "zsrc/ds")}
        entries = of_kind(doc, "content-error")[0]["entries"]
        assert [e["path"] for e in entries] == ["victim"], entries
    finally:
        sh(host, "zpool destroy -f zdst; zpool destroy -f zsrc; rm -f /root/z*.img", check=False)


# -- the literal migration of adversarial-4 (H1, M2): a pool replicated with `zfs send -R`
# into a temporary pool, then both swapped by export/import (`mig` -> `migold`, `migtmp` ->
# `mig`).  File-backed pools, so that the module's `data`/`newdata` stay untouched.

SWAP = (
    "zpool export mig && zpool import -d /root mig migold && "
    "zpool export migtmp && zpool import -d /root migtmp mig && udevadm settle"
)


def migration(host, late_writes: str = "") -> None:
    """mig: a/child, b, a 16 MiB volume, data written with a sync (so every dataset's intent
    log points to a block, as on any pool in use); window 1 into migtmp; late_writes; swap."""
    sh(
        host,
        "truncate -s 256M /root/mig.img /root/migtmp.img && zpool create -f mig /root/mig.img "
        "&& zpool create -f migtmp /root/migtmp.img && zfs create mig/a && "
        "zfs create mig/a/child && zfs create mig/b && zfs create -V 16M mig/vol && "
        "udevadm settle && head -c 256K /dev/urandom > /mig/a/f && sync /mig/a/f && "
        "dd if=/dev/urandom of=/dev/zvol/mig/vol bs=64k count=8 conv=fsync 2>/dev/null && "
        "zfs snapshot -r mig@s1 && zfs send -R mig@s1 | zfs receive -u -F migtmp",
    )
    if late_writes:
        sh(host, late_writes)
    sh(host, SWAP)


def drop_migration(host) -> None:
    sh(
        host,
        "zpool destroy -f mig; zpool destroy -f migold; zpool destroy -f migtmp; "
        "rm -f /root/mig.img /root/migtmp.img",
        check=False,
    )


def test_the_swapped_pool_without_r_is_not_ready_and_names_its_children(
    zfs_host, zverify_in_zfs_host
):
    """H1: the touch-up skipped, a child written and a dataset created late; `cutover
    migold mig` without -r said READY, "complete", exit 0."""
    host, zverify = zfs_host, zverify_in_zfs_host
    try:
        migration(host, "echo late > /mig/a/child/late-file && zfs create mig/b/new")
        children = ["migold/a", "migold/a/child", "migold/b", "migold/b/new", "migold/vol"]
        plain = cutover(host, zverify, "migold", "mig", expect=1)
        assert failing(plain) == {("descendants-not-checked", "migold")}
        assert (plain["scope"], plain["descendants_unchecked"]) == ("dataset", children)
        [left_out] = of_kind(plain, "descendants-not-checked")
        names = "migold/a, migold/a/child, migold/b, migold/b/new, migold/vol"
        assert names in left_out["message"]
        alone = cutover(host, zverify, "--no-recursive", "migold", "mig", expect=0)
        assert alone["scope"] == "dataset" and failing(alone) == set()
        text = host.run([*zverify, "cutover", "--no-recursive", "migold", "mig"], timeout=600)
        last = text.stdout.rstrip().splitlines()[-1]
        assert last.startswith("READY for migold alone; 5 descendant dataset(s) not checked")
        child = cutover(host, zverify, "migold/a", "mig/a", expect=1)
        assert child["descendants_unchecked"] == ["migold/a/child"]
        tree = cutover(host, zverify, "-r", "migold", "mig", expect=1)
        # b/new's mount directory is a real change in b: -r says so
        assert failing(tree) == {
            ("missing-dataset", "migold/b/new"),
            ("source-written", "migold/a/child"),
            ("source-written", "migold/b"),
        }, tree["findings"]
    finally:
        drop_migration(host)


def test_the_swap_alone_is_ready_and_a_write_to_the_volume_is_not(zfs_host, zverify_in_zfs_host):
    """M2: export/import alone made written@ 1,024 on the volume (and on filesystems whose
    log was used): the intent-log claim rewrites the objset block.  A complete migration
    must be READY; a write of one sector to the volume (small enough to be compared byte
    for byte) must not."""
    host, zverify = zfs_host, zverify_in_zfs_host
    try:
        migration(host)
        written = sh(host, "zfs get -Hp -o name,value written@s1 migold/vol migold/a").stdout
        assert "migold/vol\t1024" in written, written  # the bookkeeping this is about
        doc = cutover(host, zverify, "-r", "migold", "mig", expect=0)
        vol = next(d for d in doc["datasets"] if d["src"] == "migold/vol")
        assert vol["src_written"] > 0 and failing(doc) == set()
        [note] = [f for f in of_kind(doc, "source-written") if f["dataset"] == "migold/vol"]
        assert note["severity"] == "warning" and note["same_bytes"] is True
        assert note["message"].startswith("metadata only")
        sh(
            host,
            "head -c 512 /dev/urandom | dd of=/dev/zvol/migold/vol bs=512 seek=77 "
            "conv=notrunc,fsync 2>/dev/null",
        )
        doc = cutover(host, zverify, "-r", "migold", "mig", expect=1)
        assert failing(doc) == {("source-written", "migold/vol")}
        [wrote] = [f for f in of_kind(doc, "source-written") if f["dataset"] == "migold/vol"]
        assert wrote["same_bytes"] is False and wrote["bytes"] <= 64 * 1024, wrote
    finally:
        drop_migration(host)


def test_files_received_in_a_snapshot_the_source_destroyed_are_not_replica_changes(
    zfs_host, zverify_in_zfs_host
):
    """L5: the source destroyed its newest snapshot after replicating it.  NOT READY
    (`diverged`), but late-file came with @s2: it was listed as "changing files" written on
    the replica.  A file written there after @s2 still is."""
    host, zverify = zfs_host, zverify_in_zfs_host
    try:
        sh(
            host,
            "truncate -s 256M /root/lsrc.img /root/ldst.img && zpool create -f lsrc "
            "/root/lsrc.img && zpool create -f ldst /root/ldst.img && zfs create lsrc/a && "
            "echo one > /lsrc/a/f && zfs snapshot lsrc/a@s1 && echo late > /lsrc/a/late-file "
            "&& zfs snapshot lsrc/a@s2 && zfs send -R lsrc/a@s2 | zfs receive ldst/a && "
            "zfs destroy lsrc/a@s2 && zfs rollback lsrc/a@s1",
        )
        doc = cutover(host, zverify, "lsrc/a", "ldst/a", expect=1)
        assert failing(doc) == {("diverged", "lsrc/a")}, doc["findings"]
        assert "late-file" not in json.dumps(doc["findings"])
        sh(host, "echo edited > /ldst/a/edited && zpool sync ldst")
        doc = cutover(host, zverify, "lsrc/a", "ldst/a", expect=1)
        assert failing(doc) == {("diverged", "lsrc/a"), ("destination-modified", "lsrc/a")}
        [modified] = of_kind(doc, "destination-modified")
        assert "since its newest snapshot @s2" in modified["message"]
        assert "/ldst/a/edited" in modified["message"] and "late-file" not in modified["message"]
    finally:
        sh(
            host,
            "zpool destroy -f lsrc; zpool destroy -f ldst; rm -f /root/lsrc.img /root/ldst.img",
            check=False,
        )
