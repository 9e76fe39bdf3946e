"""Adversarial-4 M3 on real OpenZFS: archives `zfs receive` takes that zverify called
unreceivable or orphaned, and so refused to prune.

* a `zfs send -R` package of a tree holding a clone (and an `-R -I` package with a clone made
  since its base);
* an incremental of a renamed dataset (`zfs rename` between the full and the incremental);
* two `-R` packages with the pool imported under another name between them.

Each archive is made by plain `zfs send`; `cold check` must call it restorable (exit 0), and
`cold restore` must receive it with real `zfs receive`, each snapshot found by the GUID
`zfs get guid` gives on the source (and a clone restored as a clone of its origin)."""

from __future__ import annotations

import pytest

from tests.cold.zfs_helpers import guid, zv

pytestmark = pytest.mark.zfs


def sh(host, script: str) -> str:
    r = host.run(["bash", "-o", "pipefail", "-c", script], timeout=600)
    assert r.returncode == 0, f"{script}\nexit {r.returncode}\n{r.stderr[-2000:]}"
    return r.stdout


def guids_below(host, top: str) -> dict[str, str]:
    """Every snapshot below top (top itself included), named relative to top -> its GUID."""
    listed = sh(host, f"zfs list -Hp -r -t snapshot -o name,guid {top}")
    return {n[len(top) :]: g for n, g in (line.split("\t") for line in listed.splitlines())}


def problems(doc) -> set[tuple[str, str]]:
    found = {(p["file"], p["kind"]) for f in doc["files"] for p in f["problems"]}
    return found | {(p["file"], p["kind"]) for d in doc["datasets"] for p in d["problems"]}


def restorable(doc, dataset: str) -> set[str]:
    (ds,) = [d for d in doc["datasets"] if d["dataset"] == dataset]
    return {r["snapshot"] for r in ds["restorable"]}


def test_m3_a_replication_package_of_a_tree_with_a_clone(zfs_host, zverify_in_zfs_host, zfs_pool):
    host, zverify = zfs_host, zverify_in_zfs_host
    r, cold = f"{zfs_pool.name}/r", "/root/m3-clone"
    sh(
        host,
        f"rm -rf {cold} && mkdir {cold} && zfs create {r} && echo a > /{r}/f && "
        f"zfs snapshot {r}@0 && zfs clone {r}@0 {r}/cl && echo b > /{r}/cl/g && "
        f"zfs snapshot -r {r}@1 && zfs send -R {r}@1 > '{cold}/{r.replace('/', '%2F')}@1.zfsfull'",
    )
    source = guids_below(host, r)
    doc = zv(host, zverify, "cold", "check", "--json", cold)
    assert problems(doc) == set()
    assert restorable(doc, f"{r}/cl") == {"1"} and restorable(doc, r) == {"0", "1"}
    zv(host, zverify, "cold", "restore", "-q", "--dataset", f"{r}/cl", cold, "tank/back")
    assert guids_below(host, "tank/back") == source
    assert sh(host, "zfs get -H -o value origin tank/back/cl").strip() == "tank/back@0"
    # an `-R -I` package with a clone made since its base: the clone's origin is the base
    sh(
        host,
        f"zfs clone {r}@1 {r}/cl2 && echo c > /{r}/cl2/h && zfs snapshot -r {r}@2 && "
        f"zfs send -R -I @1 {r}@2 > '{cold}/{r.replace('/', '%2F')}@1-@2.zfsincstream'",
    )
    source = guids_below(host, r)
    doc = zv(host, zverify, "cold", "check", "--json", cold)
    assert problems(doc) == set()
    assert restorable(doc, f"{r}/cl2") == {"2"}
    zv(host, zverify, "cold", "restore", "-q", "--dataset", f"{r}/cl2", cold, "tank/again")
    assert guids_below(host, "tank/again") == source
    assert sh(host, "zfs get -H -o value origin tank/again/cl2").strip() == "tank/again@1"
    out = zv(host, zverify, "cold", "prune", "--yes", cold)  # nothing blocks it now
    assert "REFUSED" not in out


def test_m3_an_incremental_of_a_renamed_dataset(zfs_host, zverify_in_zfs_host, zfs_pool):
    host, zverify = zfs_host, zverify_in_zfs_host
    pool, cold = zfs_pool.name, "/root/m3-rename"
    sh(
        host,
        f"rm -rf {cold} && mkdir {cold} && zfs create {pool}/old && echo b > /{pool}/old/f && "
        f"zfs snapshot {pool}/old@0 && zfs send {pool}/old@0 > '{cold}/{pool}%2Fold@0.zfsfull' && "
        f"zfs rename {pool}/old {pool}/new && echo c > /{pool}/new/g && "
        f"zfs snapshot {pool}/new@1 && "
        f"zfs send -i @0 {pool}/new@1 > '{cold}/{pool}%2Fnew@0-@1.zfsinc'",
    )
    doc = zv(host, zverify, "cold", "check", "--json", cold)
    assert problems(doc) == set()
    assert [d["dataset"] for d in doc["datasets"]] == [f"{pool}/new"]
    assert restorable(doc, f"{pool}/new") == {"0", "1"}
    assert f"{pool}/new (was {pool}/old):" in zv(host, zverify, "cold", "check", cold)
    zv(host, zverify, "cold", "restore", "-q", cold, f"{pool}/back")
    assert guids_below(host, f"{pool}/back") == {
        "@0": guid(host, f"{pool}/new@0"),
        "@1": guid(host, f"{pool}/new@1"),
    }


def test_m3_a_pool_imported_under_another_name_between_two_packages(
    zfs_host, zverify_in_zfs_host, zfs_pool
):
    host, zverify = zfs_host, zverify_in_zfs_host
    cold, img = "/root/m3-pool", "/root/m3-pool-img"
    sh(
        host,
        f"rm -rf {cold} {img} && mkdir {cold} {img} && truncate -s 128M {img}/d && "
        f"zpool create -f -O mountpoint=/m3old m3old {img}/d && zfs create m3old/r && "
        "zfs create m3old/r/c && echo a > /m3old/r/c/f && zfs snapshot -r m3old/r@0 && "
        f"zfs send -R m3old/r@0 > '{cold}/m3old%2Fr@0.zfsfull' && zpool export m3old && "
        f"zpool import -d {img} m3old m3new && zfs set mountpoint=/m3new m3new && "
        "echo b > /m3new/r/c/g && zfs snapshot -r m3new/r@1 && "
        f"zfs send -R -I @0 m3new/r@1 > '{cold}/m3new%2Fr@0-@1.zfsincstream'",
    )
    try:
        source = guids_below(host, "m3new/r")
        doc = zv(host, zverify, "cold", "check", "--json", cold)
        assert problems(doc) == set()
        assert sorted(d["dataset"] for d in doc["datasets"]) == ["m3new/r", "m3new/r/c"]
        assert restorable(doc, "m3new/r/c") == {"0", "1"}
        zv(host, zverify, "cold", "restore", "-q", "--dataset", "m3new/r/c", cold, "tank/moved")
        assert guids_below(host, "tank/moved") == source
    finally:
        host.run(["zpool", "destroy", "-f", "m3new"])


def test_l2_a_child_made_since_an_incremental_packages_base(
    zfs_host, zverify_in_zfs_host, zfs_pool
):
    """`zfs send -R -I @0 tank/q@1` whose child k3 was created since: k3 is a full inside the
    package, received once the earlier `-R` full put tank/q in place."""
    host, zverify = zfs_host, zverify_in_zfs_host
    q, cold = f"{zfs_pool.name}/q", "/root/l2-child"
    named = f"{cold}/{q.replace('/', '%2F')}"
    sh(
        host,
        f"rm -rf {cold} && mkdir {cold} && zfs create {q} && zfs create {q}/k1 && "
        f"zfs snapshot -r {q}@0 && zfs send -R {q}@0 > '{named}@0.zfsfull' && "
        f"zfs create {q}/k3 && echo k > /{q}/k3/f && zfs snapshot -r {q}@1 && "
        f"zfs send -R -I @0 {q}@1 > '{named}@0-@1.zfsincstream'",
    )
    source = guids_below(host, q)
    doc = zv(host, zverify, "cold", "check", "--json", cold)
    assert problems(doc) == set()
    assert restorable(doc, f"{q}/k3") == {"1"}
    zv(host, zverify, "cold", "restore", "-q", "--dataset", f"{q}/k3", cold, "tank/qback")
    assert guids_below(host, "tank/qback") == source
