"""`zverify cold drill` on real OpenZFS: a seed-style archive (a full, then an incremental,
made by `cold send`) is received into a scratch pool on a file and into a dataset of a pool
given, compared with the source snapshot of the same GUID, the scratch destroyed, the drill
recorded in the ledger.  A chain whose content was changed with valid checksums (one WRITE
byte flipped and every checksum re-signed: `cold check` calls it intact) must fail the drill
naming the file; a scratch too small for the route must be exit 2 and leave nothing behind.

Each test runs on every OpenZFS release of the harness (2.1 in CI, 2.3 too in
scripts/vm-full.sh; the two marked vm_full only there).  The archive lives in the exchange
directory the host shares with the VM, so that the host can re-sign a copy of it; every
zverify command runs in the VM, where ZFS is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cold.test_consolidate_zfs import flip_last_write
from tests.cold.zfs_helpers import guid, zv

pytestmark = pytest.mark.zfs

POOL = "rtank"  # zfs_release_pool's
FILES = {"a.bin": 96, "dir/b.bin": 64, "dir/c.txt": 4}  # KiB, of random bytes


@pytest.fixture(scope="module")
def archive(zfs_release_host, zfs_release_pool, zverify_in_release_host):
    """One per module and release (the last test adds to it): rtank/src with @s0 and @s1
    (uncompressed, so a WRITE payload is the file's bytes), archived by `cold send` as a
    full and an incremental; (dataset, host dir, guest dir)."""
    host, zverify = zfs_release_host, zverify_in_release_host
    ds = zfs_release_pool.dataset("src", compression="off")
    write = "; ".join(
        f"mkdir -p {ds.mountpoint}/dir; head -c {kib}K /dev/urandom > {ds.mountpoint}/{name}"
        for name, kib in FILES.items()
    )
    host.run(["sh", "-c", write], check=True)
    host.run(["zfs", "snapshot", f"{ds.name}@s0"], check=True)
    host.run(["sh", "-c", f"head -c 48K /dev/urandom > {ds.mountpoint}/dir/b.bin"], check=True)
    host.run(["zfs", "snapshot", f"{ds.name}@s1"], check=True)
    here = Path(host.exchange_host) / "drill"
    shutil.rmtree(here, ignore_errors=True)
    there = f"{host.exchange_guest}/drill"
    host.run(["mkdir", "-p", f"{there}/cold"], check=True)
    zv(host, zverify, "cold", "send", "--snapshot", "s0", ds.name, f"{there}/cold")
    zv(host, zverify, "cold", "send", ds.name, f"{there}/cold")
    return ds, here, there


def leftovers(host) -> str:
    pools = host.run(["zpool", "list", "-H", "-o", "name"], check=True).stdout
    sets = host.run(["zfs", "list", "-H", "-o", "name"], check=True).stdout
    files = host.run(["sh", "-c", "ls /var/tmp | grep zverify-drill || true"]).stdout
    return "".join(line for line in (pools + sets + files).splitlines(True) if "drill" in line)


def test_a_drill_of_a_seed_archive_restores_the_source_and_is_recorded(
    zfs_release_host, zverify_in_release_host, archive
):
    host, zverify = zfs_release_host, zverify_in_release_host
    ds, here, there = archive
    cold = f"{there}/cold"
    doc = zv(host, zverify, "cold", "drill", "--json", "--scratch-file", "256M", cold)
    assert doc["result"] == "proven" and doc["exit_code"] == 0, doc
    assert doc["snapshot"] == {"name": "s1", "guid": guid(host, f"{ds.name}@s1")}
    assert len(doc["route"]) == 2 and doc["compared"]["against"] == f"snapshot {ds.name}@s1"
    assert doc["compared"]["entries"] == 1 + 1 + len(FILES)  # the root, dir/, the files
    assert [f"zfs-{host.openzfs}", f"zfs-kmod-{host.openzfs}"] == doc["openzfs"]
    assert leftovers(host) == ""
    lines = (here / "cold" / ".zverify-ledger.jsonl").read_text().splitlines()
    drilled = [json.loads(line) for line in lines if '"method":"drill"' in line]
    assert len(drilled) == 1, lines
    assert drilled[0]["result"] == "proven" and drilled[0]["file"] == f"drill:{ds.name}@s1"
    assert drilled[0]["drill"]["route"] == doc["route"]
    # on a pool given, at an older snapshot, against a manifest of the source (as when the
    # source is gone): a dataset of the pool, destroyed after
    manifest = f"{there}/s0.zvm"
    zv(host, zverify, "manifest", f"{ds.mountpoint}/.zfs/snapshot/s0", "-o", manifest)
    older = zv(
        host, zverify, "cold", "drill", "--json", "--pool", POOL, "--snapshot", "s0",
        "--against", manifest, cold,
    )  # fmt: skip
    assert older["result"] == "proven" and older["scratch"].startswith(f"{POOL}/zverify-drill-")
    assert older["compared"]["against"] == f"manifest {manifest}", older
    assert leftovers(host) == ""
    check = zv(host, zverify, "cold", "check", cold)  # the drill's lines are a ledger's
    assert "chain intact" in check
    # a scrub's rotation ends with a drill of the dataset drilled longest ago
    prom = f"{there}/cold.prom"
    scrubbed = zv(
        host, zverify, "cold", "scrub", "--json", "--drill-pool", POOL, "--prometheus", prom, cold
    )
    assert scrubbed["drill"]["result"] == "proven" and scrubbed["exit_code"] == 0, scrubbed
    assert scrubbed["drill_age_seconds"][ds.name] is not None
    rows = (here / "cold.prom").read_text().splitlines()
    assert any(r.startswith("zverify_cold_drill_age_seconds{") and "+Inf" not in r for r in rows)
    assert leftovers(host) == ""


def test_content_changed_with_valid_checksums_fails_the_drill_naming_the_file(
    zfs_release_host, zverify_in_release_host, archive
):
    host, zverify = zfs_release_host, zverify_in_release_host
    _, here, there = archive
    shutil.copytree(here / "cold", here / "tampered")
    (incremental,) = (p for p in (here / "tampered").iterdir() if p.suffix == ".zfsincstream")
    at = flip_last_write(incremental)
    print(f"changed byte {at} of {incremental.name} and re-signed it")
    tampered = f"{there}/tampered"
    zv(host, zverify, "cold", "check", tampered)  # intact, as far as checksums can tell
    doc = zv(host, zverify, "cold", "drill", "--json", "--pool", POOL, tampered, expect=1)
    assert doc["result"] == "damaged" and doc["compared"]["differences"] >= 1, doc
    assert [d["path"] for d in doc["compared"]["shown"]] == ["dir/b.bin"], doc
    assert leftovers(host) == ""
    text = zv(host, zverify, "cold", "drill", "--pool", POOL, tampered, expect=1)
    assert "DIFFERENT" in text.splitlines()[-1] and "dir/b.bin" in text


@pytest.mark.vm_full
def test_a_scratch_too_small_is_not_a_drill_and_leaves_nothing(
    zfs_release_host, zverify_in_release_host, archive
):
    host, zverify = zfs_release_host, zverify_in_release_host
    ds, _, there = archive
    host.run(["sh", "-c", f"head -c 40M /dev/urandom > {ds.mountpoint}/big.bin"], check=True)
    host.run(["zfs", "snapshot", f"{ds.name}@s2"], check=True)
    zv(host, zverify, "cold", "send", ds.name, f"{there}/cold")
    doc = zv(
        host, zverify, "cold", "drill", "--json", "--scratch-file", "64M", f"{there}/cold",
        expect=2,
    )  # fmt: skip
    assert doc["result"] == "problem" and doc["compared"] is None, doc
    assert "space" in doc["failure"], doc["failure"]
    assert leftovers(host) == ""
    capped = zv(
        host, zverify, "cold", "drill", "--json", "--pool", POOL, "--max-bytes", "1M",
        f"{there}/cold", expect=2,
    )  # fmt: skip
    assert "more than the 1,048,576 allowed" in capped["failure"], capped
    assert leftovers(host) == ""


@pytest.mark.vm_full
def test_with_the_source_gone_the_drill_compares_with_the_archived_manifest(
    zfs_release_host, zfs_release_pool, zverify_in_release_host
):
    """`cold send --manifest` keeps what the snapshot held beside its stream; once the
    dataset is destroyed, the drill compares the received tree with it.  A manifest changed
    since is `cold check`'s manifest-mismatch and no drill's reference (exit 2)."""
    host, zverify = zfs_release_host, zverify_in_release_host
    ds = zfs_release_pool.dataset("gone")
    write = f"mkdir -p {ds.mountpoint}/d; head -c 40K /dev/urandom > {ds.mountpoint}/d/f"
    host.run(["sh", "-c", write], check=True)
    host.run(["setfattr", "-n", "user.k", "-v", "v", f"{ds.mountpoint}/d/f"], check=True)
    host.run(["zfs", "snapshot", f"{ds.name}@m1"], check=True)
    here, there = Path(host.exchange_host) / "kept", f"{host.exchange_guest}/kept"
    shutil.rmtree(here, ignore_errors=True)
    host.run(["mkdir", "-p", there], check=True)
    sent = zv(host, zverify, "cold", "send", "--json", "--manifest", ds.name, there)
    manifest = sent["sent"]["manifest"]
    assert manifest["file"] == sent["sent"]["file"] + ".manifest", sent
    assert manifest["entries"] == 3 and manifest["snapshot"] == f"{ds.name}@m1", manifest
    assert "INTACT" in zv(host, zverify, "cold", "check", there)
    host.run(["zfs", "destroy", "-r", ds.name], check=True)
    doc = zv(host, zverify, "cold", "drill", "--json", "--scratch-file", "256M", there)
    assert doc["result"] == "proven" and doc["exit_code"] == 0, doc
    assert doc["compared"]["against"] == f"archived manifest {manifest['file']}", doc
    assert doc["compared"]["entries"] == 3 and leftovers(host) == ""
    path = here / manifest["file"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    checked = zv(host, zverify, "cold", "check", "--json", there, expect=1)
    kinds = {p["kind"] for f in checked["files"] for p in f["problems"]}
    assert kinds == {"manifest-mismatch"}, checked
    failed = zv(host, zverify, "cold", "drill", "--json", "--scratch-file", "256M", there, expect=2)
    assert "is not the manifest its sidecar names" in failed["failure"], failed
    assert leftovers(host) == ""
