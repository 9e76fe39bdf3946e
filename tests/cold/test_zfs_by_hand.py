"""Issue 29 on real OpenZFS: archives made by hand, the way people already keep them, and
`zverify cold` taking them as they are (no renaming).

The streams are written by the commands the classic write-up types, literally
(`zfs send poolname/setname@0 > setname@0.zfsfull`, `-i`, `-I`), by `zfs send -R` named after
the top dataset, and through `zstd`, `gzip` and `xz` into two "disks" with one directory per
dataset.  Every verdict is held against OpenZFS: what `check` calls restorable is received, and
each snapshot must arrive with the GUID `zfs get guid` gives on the source."""

from __future__ import annotations

import json

import pytest

from tests.cold.zfs_helpers import flip_byte, guid, zv

pytestmark = pytest.mark.zfs

SNAPS = [str(i) for i in range(11)]  # @0..@9 as in the write-up, @10 for a second chain


def sh(host, script: str) -> str:
    r = host.run(["bash", "-o", "pipefail", "-c", script], timeout=600)
    assert r.returncode == 0, f"{script}\nexit {r.returncode}\n{r.stderr[-2000:]}"
    return r.stdout


@pytest.fixture(scope="module")
def setname(zfs_release_host, zfs_release_pool):
    """`rtank/setname` (with a child, for -R) and snapshots @0..@10 of both, made with -r,
    once per OpenZFS release: the tests that take it run on each."""
    host = zfs_release_host
    ds = zfs_release_pool.dataset("setname")
    zfs_release_pool.dataset("setname/child")
    for snap in SNAPS:
        host.run(["sh", "-c", f"head -c 40K /dev/urandom > '{ds.mountpoint}/{snap}.bin'"])
        host.run(["zfs", "snapshot", "-r", f"{ds.name}@{snap}"], check=True)
    guids = {s: guid(host, f"{ds.name}@{s}") for s in SNAPS}
    return ds, guids


def received_guids(host, target: str) -> dict[str, str]:
    listed = host.run(
        ["zfs", "list", "-Hp", "-t", "snapshot", "-o", "name,guid", "-d", "1", target], check=True
    ).stdout
    return {line.split("\t")[0].split("@")[1]: line.split("\t")[1] for line in listed.splitlines()}


def problems(doc) -> set[tuple[str, str]]:
    found = {(p["file"], p["kind"]) for f in doc["files"] for p in f["problems"]}
    found |= {(p["file"], p["kind"]) for d in doc["datasets"] for p in d["problems"]}
    return found | {(p["file"], p["kind"]) for p in doc.get("problems", [])}


@pytest.mark.release_sample
def test_the_write_ups_commands_typed_literally_check_clean_and_restore(
    zfs_release_host, zverify_in_release_host, setname
):
    host, zverify = zfs_release_host, zverify_in_release_host
    ds, guids = setname
    cold = "/root/coldstorage"
    sh(
        host,
        f"rm -rf {cold} && mkdir {cold} && cd {cold} && "
        f"zfs send {ds.name}@0 > setname@0.zfsfull && "
        f"zfs send -i @0 {ds.name}@1 > setname@0-@1.zfsinc && "
        f"zfs send -I @0 {ds.name}@9 > setname@0-@9.zfsincstream",
    )
    doc = zv(host, zverify, "cold", "check", "--json", cold)
    assert problems(doc) == set()
    (dataset,) = doc["datasets"]
    assert dataset["dataset"] == ds.name
    assert [r["snapshot"] for r in dataset["restorable"]] == SNAPS[:10]
    target = "rtank/restored-by-hand"
    zv(host, zverify, "cold", "restore", "-q", cold, target)
    assert received_guids(host, target) == {s: guids[s] for s in SNAPS[:10]}


def test_a_replication_package_named_by_its_top_dataset(
    zfs_release_host, zverify_in_release_host, setname
):
    host, zverify = zfs_release_host, zverify_in_release_host
    ds, guids = setname
    cold = "/root/rpackage"
    sh(host, f"rm -rf {cold} && mkdir {cold} && zfs send -R {ds.name}@9 > {cold}/setname@9.zfsfull")
    doc = zv(host, zverify, "cold", "check", "--json", cold)
    assert problems(doc) == set()
    assert {d["dataset"] for d in doc["datasets"]} == {ds.name, f"{ds.name}/child"}
    target = "rtank/restored-package"
    zv(host, zverify, "cold", "restore", "-q", "--dataset", ds.name, cold, target)
    assert received_guids(host, target) == {s: guids[s] for s in SNAPS[:10]}


def _two_disks(host, ds) -> tuple[str, str, dict[str, str]]:
    """A chain spread over two disks, one directory per dataset, three compressions: the full
    plain on disk 1, @0->@1 gzip'ed beside it, @1..@9 (`-I`) through zstd on disk 2, and @9->@10
    plain there too; then a new full of @10 through xz."""
    d1, d2 = "/root/disk1", "/root/disk2"
    files = {
        "full": f"{d1}/setname/setname@0.zfsfull",
        "gz": f"{d1}/setname/setname@0-@1.zfsinc.gz",
        "zst": f"{d2}/setname/setname@1-@9.zfsincstream.zst",
        "link": f"{d2}/setname/setname@9-@10.zfsinc",
        "new": f"{d2}/setname/setname@10.zfsfull.xz",
    }
    sh(
        host,
        f"rm -rf {d1} {d2} && mkdir -p {d1}/setname {d2}/setname && "
        f"zfs send {ds.name}@0 > {files['full']} && "
        f"zfs send -i @0 {ds.name}@1 | gzip > {files['gz']} && "
        f"zfs send -I @1 {ds.name}@9 | zstd -q > {files['zst']} && "
        f"zfs send -i @9 {ds.name}@10 > {files['link']} && "
        f"zfs send {ds.name}@10 | xz > {files['new']}",
    )
    return d1, d2, files


@pytest.mark.vm_full
def test_compressed_files_over_two_disks_check_restore_and_prune(
    zfs_release_host, zverify_in_release_host, setname
):
    host, zverify = zfs_release_host, zverify_in_release_host
    ds, guids = setname
    d1, d2, files = _two_disks(host, ds)
    doc = zv(host, zverify, "cold", "check", "--json", "--recursive", d1, d2)
    assert problems(doc) == set()
    (dataset,) = doc["datasets"]
    assert {r["snapshot"] for r in dataset["restorable"]} == set(SNAPS)
    # one disk alone: its chain stops where the other disk's files begin
    alone = zv(host, zverify, "cold", "check", "--json", "--recursive", d2, expect=1)
    assert {k for _, k in problems(alone)} == {"orphan"}
    # restore @9 across both disks, decompressing through the validating relay
    target = "rtank/from-two-disks"
    zv(host, zverify, "cold", "restore", "-q", "--snapshot", "9", "--recursive", d1, d2, target)
    assert received_guids(host, target) == {s: guids[s] for s in SNAPS[:10]}
    # prune across both disks: the old chain goes, the new xz full stays; a third place that
    # was not given is never touched
    d3 = "/root/disk3"
    sh(host, f"rm -rf {d3} && mkdir {d3} && cp {files['full']} {d3}/")
    zv(host, zverify, "cold", "prune", "-q", "--yes", "--recursive", d1, d2)
    left = sh(host, "cd /root && find disk1 disk2 disk3 -type f | sort").split()
    assert left == ["disk2/setname/setname@10.zfsfull.xz", "disk3/setname@0.zfsfull"]
    target = "rtank/after-prune-by-hand"
    zv(host, zverify, "cold", "restore", "-q", "--recursive", d1, d2, target)
    assert received_guids(host, target) == {"10": guids["10"]}


@pytest.mark.parametrize("damage", ["flipped", "truncated"])
def test_damage_inside_a_compressed_file_is_found_and_never_restored(
    zfs_release_host, zverify_in_release_host, setname, damage
):
    host, zverify = zfs_release_host, zverify_in_release_host
    ds, _ = setname
    cold = f"/root/zst-{damage}"
    zst = f"{cold}/setname@0-@9.zfsincstream.zst"
    sh(
        host,
        f"rm -rf {cold} && mkdir {cold} && zfs send {ds.name}@0 > {cold}/setname@0.zfsfull && "
        f"zfs send -I @0 {ds.name}@9 | zstd -q > {zst}",
    )
    size = int(sh(host, f"stat -c %s {zst}"))
    if damage == "flipped":
        flip_byte(host, zst, size // 2)
    else:
        sh(host, f"truncate -s {size * 2 // 3} {zst}")
    doc = zv(host, zverify, "cold", "check", "--json", cold, expect=1)
    (bad,) = [f for f in doc["files"] if f["file"].endswith(".zst")]
    assert not bad["valid"] and bad["problems"], json.dumps(bad)
    assert bad["problems"][0]["kind"] in {"damaged", "truncated"}
    (dataset,) = doc["datasets"]
    assert [r["snapshot"] for r in dataset["restorable"]] == ["0"]
    target = f"rtank/never-{damage}"
    r = host.run([*zverify, "cold", "restore", "--snapshot", "9", cold, target])
    assert r.returncode == 1 and "cannot be restored" in r.stderr, r.stderr
    assert host.run(["zfs", "list", target]).returncode != 0
