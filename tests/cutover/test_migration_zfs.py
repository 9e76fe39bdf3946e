"""The pool migration of issue 46 replayed literally on real OpenZFS: pool `data`, a cold
archive made by `zverify cold send`, `zpool create tmppool`, `zfs send -R | zfs receive`,
`zpool export data; zpool import -o readonly=on data olddata; zpool export tmppool; zpool
import tmppool data`, then `cutover olddata data --cold DIR`.  One setup, several ways it
goes wrong at once (a skipped touch-up, a dataset only on the old pool, a child snapshot
destroyed on the new pool, a bookmark `send -R` dropped under a cold archive, no scrub after
the copy), each asserted as its own finding; then the scrub, and unverified-copy is gone."""

from __future__ import annotations

import pytest

from tests.cutover.test_zfs import cutover, of_kind, sh

pytestmark = pytest.mark.zfs


def seed_pool(host, zverify, cold: str) -> str:
    """Pool `data` (home, home/kid, arch) on the first scratch device with @s1 everywhere,
    data/arch@s1 archived by `cold send` into cold; returns the device for the new pool."""
    sh(host, f"rm -rf {cold}; mkdir -p {cold}")
    sh(
        host,
        f"zpool create -f -O mountpoint=/data data {host.scratch_devices[0]} "
        "&& zfs create data/home && zfs create data/home/kid && zfs create data/arch "
        "&& echo a > /data/home/a && echo k > /data/home/kid/k && echo z > /data/arch/z "
        "&& zfs snapshot -r data@s1",
    )
    sh(host, " ".join([*zverify, "cold", "send", "data/arch", cold]))
    return host.scratch_devices[1]


def destroy_pools(host) -> None:
    """The three pools of a migration, gone, or this test fails here: a pool left imported
    (a destroy refused while something still held it) keeps its disk busy, and every later
    module that creates a pool on it would fail instead (seen once in CI)."""
    sh(
        host,
        "for p in data olddata tmppool; do zpool list $p >/dev/null 2>&1 || continue; "
        "zpool destroy -f $p || { sleep 2; zpool destroy -f $p; } || zpool export -f $p; "
        "done; zpool list -H -o name",
    )
    left = host.run(["zpool", "list", "-H", "-o", "name"]).stdout.split()
    assert not {"data", "olddata", "tmppool"} & set(left), left


def test_the_migration_is_ready_only_when_everything_after_it_still_chains(
    zfs_host, zverify_in_zfs_host
):
    host, zverify = zfs_host, zverify_in_zfs_host
    cold = "/root/cutover-cold"
    try:
        new = seed_pool(host, zverify, cold)
        # the archive's base: @s1, kept by `cold send` as a bookmark, the snapshot then pruned
        sh(host, "zfs list -H -t bookmark -o name -r data/arch | grep -q '#' && "
                 "zfs destroy data/arch@s1")  # fmt: skip
        sh(
            host,
            f"zfs snapshot -r data@move1 && zpool create -f tmppool {new} "
            "&& zfs send -R data@move1 | zfs receive -F -u tmppool",
        )
        # no touch-up: written after the copy; a dataset made after it; a child's snapshots lost
        sh(host, "echo late > /data/home/late && zfs create data/only && zpool sync data")
        sh(host, "zfs destroy tmppool/home/kid@move1")
        sh(
            host,
            "zpool export data && zpool import -o readonly=on data olddata "
            "&& zpool export tmppool && zpool import tmppool data",
        )
        args = ("-r", "--pool-state", "--cold", cold, "olddata", "data")
        doc = cutover(host, zverify, *args, expect=1)
        kinds = {(f["kind"], f["dataset"]) for f in doc["findings"] if f["severity"] == "fail"}
        assert ("source-written", "olddata/home") in kinds
        assert ("missing-dataset", "olddata/only") in kinds
        assert any(k[1] == "olddata/home/kid" for k in kinds), kinds
        (base,) = of_kind(doc, "cold-base-missing")
        assert base["dataset"] == "olddata/arch" and base["on_source"][0].startswith(
            "olddata/arch#"
        )
        assert "16756" in base["message"]
        (copy,) = of_kind(doc, "unverified-copy")
        assert copy["severity"] == "warning"
        sh(host, "zpool scrub -w data")
        doc = cutover(host, zverify, *args, expect=1)
        assert of_kind(doc, "unverified-copy") == []
    finally:
        destroy_pools(host)


def test_the_migration_done_right_is_ready_once_scrubbed_and_its_archive_chains_on(
    zfs_host, zverify_in_zfs_host
):
    """The same migration without the mistakes: the archive's base snapshot kept (so `send
    -R` carries it), a touch-up `send -R -I` after the last write, the swap.  With --strict it
    is NOT READY until `zpool scrub` of the new pool has finished after the receives; then
    READY, and the cold archive takes its next incremental from the new pool and chains on."""
    host, zverify = zfs_host, zverify_in_zfs_host
    cold = "/root/cutover-cold-ok"
    try:
        new = seed_pool(host, zverify, cold)
        sh(
            host,
            f"zfs snapshot -r data@move1 && zpool create -f tmppool {new} "
            "&& zfs send -R data@move1 | zfs receive -F -u tmppool "
            "&& echo late > /data/home/late && zfs snapshot -r data@move2 "
            "&& zfs send -R -I @move1 data@move2 | zfs receive -F -u tmppool",
        )
        sh(
            host,
            "zpool export data && zpool import -o readonly=on data olddata "
            "&& zpool export tmppool && zpool import tmppool data",
        )
        args = ("-r", "--pool-state", "--strict", "--cold", cold, "olddata", "data")
        doc = cutover(host, zverify, *args, expect=1)
        assert {f["kind"] for f in doc["findings"] if f["severity"] == "fail"} == {
            "unverified-copy"
        }, doc["findings"]
        sh(host, "zpool scrub -w data")
        doc = cutover(host, zverify, *args, expect=0)
        assert doc["ready"] is True and doc["scope"] == "tree", doc
        sh(host, "zfs snapshot data/arch@after")
        sh(host, " ".join([*zverify, "cold", "send", "data/arch", cold]))
        checked = sh(host, " ".join([*zverify, "cold", "check", "--dataset", "data/arch", cold]))
        assert "INTACT" in checked.stdout and "@after" in checked.stdout, checked.stdout
    finally:
        destroy_pools(host)
