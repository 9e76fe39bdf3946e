"""`zverify cold send` and `cold check` on real OpenZFS: the seed scenario of snapshots archived
as files, chosen by GUID, validated while written, and received back by `zfs receive`."""

from __future__ import annotations

import json

import pytest

from tests.cold.zfs_helpers import assert_same_snapshot, guid, snap_with_data, zv

pytestmark = pytest.mark.zfs


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
    # restore: every snapshot back with the source's GUID, and the same content
    target = ds.name.split("/")[0] + "/restored"
    out = zv(host, zverify, "cold", "restore", cold, target)
    assert f"restored {target}@s3" in out
    for snap in ("s0", "s1", "s3"):
        assert guid(host, f"{target}@{snap}") == restorable[snap]
    assert_same_snapshot(host, zverify, ds, target, "s3")


def test_restore_refuses_a_damaged_file_before_receiving_anything(
    zfs_host, zverify_in_zfs_host, source_and_dir
):
    host, zverify = zfs_host, zverify_in_zfs_host
    ds, cold = source_and_dir
    zv(host, zverify, "cold", "send", "--snapshot", "s0", ds.name, cold)
    zv(host, zverify, "cold", "send", ds.name, cold)
    newest = ds.name.replace("/", "%2F") + "@s0-@s2.zfsincstream"
    flip = (
        "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); "
        "b[len(b)//2]^=1; open(p,'wb').write(bytes(b))"
    )
    host.run(["python3", "-c", flip, f"{cold}/{newest}"], check=True)
    target = ds.name.split("/")[0] + "/restored2"
    plan = zv(host, zverify, "cold", "restore", "--dry-run", "--snapshot", "s0", cold, target)
    assert "@s0" in plan  # what the damage leaves restorable is still planned
    r = host.run([*zverify, "cold", "restore", "--snapshot", "s2", cold, target])
    assert r.returncode == 1 and "cannot be restored" in r.stderr  # check found the damage
    r = host.run(["zfs", "list", target])
    assert r.returncode != 0  # nothing was received


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


def test_an_incremental_takes_the_flags_of_the_chain_it_extends(
    zfs_host, zfs_pool, zverify_in_zfs_host
):
    """A cron line that forgets --large-block still extends an -L chain with -L (finding C3):
    the chain stays receivable; --raw on a chain sent without -w is refused, nothing sent."""
    host, zverify = zfs_host, zverify_in_zfs_host
    ds = zfs_pool.dataset("big", recordsize="1M", compression="off")
    for snap in ("l0", "l1"):
        # two 1 MiB records each time: large blocks active on the source
        host.run(["sh", "-c", f"head -c 1500000 /dev/urandom > '{ds.mountpoint}/{snap}.bin'"],
                 check=True)  # fmt: skip
        host.run(["zfs", "snapshot", f"{ds.name}@{snap}"], check=True)
    cold = "/root/cold-L"
    host.run(["sh", "-c", f"rm -rf {cold} && mkdir {cold}"], check=True)
    zv(
        host,
        zverify,
        "cold",
        "send",
        "--no-progress",
        "--large-block",
        "--snapshot",
        "l0",
        ds.name,
        cold,
    )
    refused = host.run([*zverify, "cold", "send", "--no-progress", "--raw", ds.name, cold])
    assert refused.returncode == 2 and "--raw" in refused.stderr and "-w" in refused.stderr
    sent = zv(host, zverify, "cold", "send", "--no-progress", "--json", ds.name, cold)["sent"][
        "file"
    ]
    info = zv(host, zverify, "stream", "info", "--json", f"{cold}/{sent}")
    assert all("LARGE_BLOCKS" in s["features"] for s in info["substreams"]), info
    target = f"{zfs_pool.name}/restored-L"
    out = zv(host, zverify, "cold", "restore", "--no-progress", cold, target)
    assert f"restored {target}@l1" in out
    assert guid(host, f"{target}@l1") == guid(host, f"{ds.name}@l1")
