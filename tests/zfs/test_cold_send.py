"""`zverify cold send` and `cold check` on real OpenZFS: the seed scenario of snapshots archived
as files, chosen by GUID, validated while written, and received back by `zfs receive`."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.zfs


def zv(host, zverify, *args, expect=0):
    r = host.run([*zverify, *args], timeout=900)
    assert r.returncode == expect, f"exit {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
    return json.loads(r.stdout) if "--json" in args else r.stdout


def guid(host, name):
    return host.run(["zfs", "get", "-Hp", "-o", "value", "guid", name], check=True).stdout.strip()


def snap_with_data(host, ds, snap, size_kib=64):
    host.run(
        ["sh", "-c", f"head -c {size_kib}K /dev/urandom > '{ds.mountpoint}/{snap}.bin'"],
        check=True,
    )
    host.run(["zfs", "snapshot", f"{ds.name}@{snap}"], check=True)


@pytest.fixture
def source_and_dir(zfs_host, zfs_pool):
    ds = zfs_pool.dataset("src data")  # a name with a space
    for s in ("s0", "s1", "s2"):
        snap_with_data(zfs_host, ds, s)
    cold = "/root/cold"
    zfs_host.run(["sh", "-c", f"rm -rf {cold} && mkdir {cold}"], check=True)
    return ds, cold


def test_seed_scenario_full_then_package_then_bookmark_incremental(
    zfs_host, zverify_in_zfs_host, source_and_dir
):
    host, zverify = zfs_host, zverify_in_zfs_host
    ds, cold = source_and_dir
    enc = ds.name.replace("/", "%2F")
    first = zv(host, zverify, "cold", "send", "--json", "--snapshot", "s0", ds.name, cold)
    assert first["sent"]["file"] == f"{enc}@s0.zfsfull"
    second = zv(host, zverify, "cold", "send", "--json", ds.name, cold)
    assert second["sent"]["file"] == f"{enc}@s0-@s2.zfsincstream"
    nothing = zv(host, zverify, "cold", "send", "--json", ds.name, cold)
    assert nothing["sent"] is None and "already restorable" in nothing["reason"]
    # the base snapshot goes away; the bookmark zverify made keeps the chain going
    snap_with_data(host, ds, "s3")
    host.run(["zfs", "destroy", f"{ds.name}@s2"], check=True)
    third = zv(host, zverify, "cold", "send", "--json", ds.name, cold)
    assert third["sent"]["file"] == f"{enc}@s2-@s3.zfsinc"
    assert third["sent"]["bookmark"] == f"{ds.name}#zverify-s3"
    report = zv(host, zverify, "cold", "check", "--json", cold)
    (dataset,) = report["datasets"]
    assert report["valid"] is True and dataset["dataset"] == ds.name
    restorable = {r["snapshot"]: r["guid"] for r in dataset["restorable"]}
    assert restorable == {
        "s0": guid(host, f"{ds.name}@s0"),
        "s1": guid(host, f"{ds.name}@s1"),
        "s2": guid(host, f"{ds.name}#zverify-s2"),  # the snapshot is gone, its bookmark not
        "s3": guid(host, f"{ds.name}@s3"),
    }
    sidecar = json.loads(host.run(["cat", f"{cold}/{enc}@s0.zfsfull.json"], check=True).stdout)
    assert sidecar["to_guid"] == restorable["s0"] and sidecar["dataset"] == ds.name
    sha = host.run(["sha256sum", f"{cold}/{enc}@s0.zfsfull"], check=True).stdout.split()[0]
    assert sidecar["sha256"] == sha
    # the files really restore: receive them in the order check gave, GUIDs as the source's
    target = ds.name.split("/")[0] + "/restored"
    (s3,) = [r for r in dataset["restorable"] if r["snapshot"] == "s3"]
    for name in s3["files"]:
        host.run(["sh", "-c", f"zfs receive -F '{target}' < '{cold}/{name}'"], check=True)
    for snap in ("s0", "s1", "s3"):
        assert guid(host, f"{target}@{snap}") == restorable[snap]


def test_unknown_snapshot_or_dataset_exits_2_and_leaves_nothing(
    zfs_host, zverify_in_zfs_host, source_and_dir
):
    host, zverify = zfs_host, zverify_in_zfs_host
    ds, cold = source_and_dir
    r = host.run([*zverify, "cold", "send", "--snapshot", "nope", ds.name, cold])
    assert r.returncode == 2 and "no snapshot @nope" in r.stderr
    r = host.run([*zverify, "cold", "send", f"{ds.name}-missing", cold])
    assert r.returncode == 2 and "dataset does not exist" in r.stderr
    assert host.run(["ls", "-A", cold], check=True).stdout == ""
