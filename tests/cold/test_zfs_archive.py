"""The cold-storage workflow of issue 8 on real OpenZFS, through zverify alone: the seed
scenario (@0..@9; a full of @0, `-i` @0->@1 and @1->@2, `-I` @2->@9), every kind of damage
an archive collects, a send killed or starved of space, prune with a trial receive, and
encrypted (`--raw`) and compressed datasets.

Expected GUIDs come from `zfs get guid` on the source, never from zverify."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.cold.zfs_helpers import assert_same_snapshot, flip_byte, guid, snap_with_data, zv

pytestmark = pytest.mark.zfs

SNAPS = [f"s{i}" for i in range(10)]


@pytest.fixture(scope="module")
def seed(zfs_release_host, zfs_release_pool, zverify_in_release_host):
    """The seed archive of `rtank/seed set/a b` (spaces and slashes), built once per OpenZFS
    release: the tests that take it run on each."""
    host, zverify = zfs_release_host, zverify_in_release_host
    ds = zfs_release_pool.dataset("seed set/a b")
    for snap in SNAPS:
        snap_with_data(host, ds, snap, size_kib=48)
    cold = "/root/seed"
    host.run(["sh", "-c", f"rm -rf {cold} && mkdir {cold}"], check=True)
    zv(host, zverify, "cold", "send", "--no-progress", "--snapshot", "s0", ds.name, cold)
    for snap in ("s1", "s2"):
        zv(
            host,
            zverify,
            "cold",
            "send",
            "--no-progress",
            "--no-intermediate",
            "--snapshot",
            snap,
            ds.name,
            cold,
        )
    zv(host, zverify, "cold", "send", "--no-progress", ds.name, cold)
    guids = {s: guid(host, f"{ds.name}@{s}") for s in SNAPS}
    enc = ds.name.replace("/", "%2F")
    files = {
        "full": f"{enc}@s0.zfsfull",
        "i01": f"{enc}@s0-@s1.zfsinc",
        "i12": f"{enc}@s1-@s2.zfsinc",
        "I29": f"{enc}@s2-@s9.zfsincstream",
    }
    return ds, cold, guids, files


def copy_of(host, cold: str, name: str) -> str:
    """A fresh copy of the archive to damage."""
    path = f"/root/{name}"
    host.run(["sh", "-c", f"rm -rf {path} && cp -a {cold} {path}"], check=True)
    return path


def problem_kinds(doc) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for f in doc["files"]:
        for p in f["problems"]:
            found.setdefault(p["file"], set()).add(p["kind"])
    for d in doc["datasets"]:
        for p in d["problems"]:
            found.setdefault(p["file"], set()).add(p["kind"])
    return found


def test_seed_scenario_archives_checks_and_restores_all_ten(
    zfs_release_host, zverify_in_release_host, seed
):
    host, zverify = zfs_release_host, zverify_in_release_host
    ds, cold, guids, files = seed
    listing = host.run(["ls", cold], check=True).stdout.split("\n")
    assert sorted(n for n in listing if n and not n.endswith(".json")) == sorted(files.values())
    doc = zv(host, zverify, "cold", "check", "--json", cold)
    (dataset,) = doc["datasets"]
    assert doc["valid"] and dataset["dataset"] == ds.name
    assert {r["snapshot"]: r["guid"] for r in dataset["restorable"]} == guids
    kinds = {f["file"]: f["kind"] for f in doc["files"]}
    assert kinds[files["full"]] == "full" and kinds[files["i01"]] == "incremental"
    assert kinds[files["I29"]] == "intermediate"
    target = f"{ds.name.split('/')[0]}/restored seed"
    out = zv(host, zverify, "cold", "restore", "--no-progress", cold, target)
    assert "restored" in out and "@s9" in out
    restored = host.run(
        ["zfs", "list", "-Hp", "-t", "snapshot", "-o", "name,guid", "-d", "1", target], check=True
    ).stdout
    got = {line.split("\t")[0].split("@")[1]: line.split("\t")[1] for line in restored.splitlines()}
    assert got == guids
    for snap in ("s4", "s9"):
        assert_same_snapshot(host, zverify, ds, target, snap)


def test_a_missing_middle_incremental_stops_what_is_restorable(
    zfs_release_host, zverify_in_release_host, seed
):
    host, zverify = zfs_release_host, zverify_in_release_host
    _, cold, _, files = seed
    arch = copy_of(host, cold, "gap")
    host.run(["rm", f"{arch}/{files['i12']}"], check=True)
    doc = zv(host, zverify, "cold", "check", "--json", arch, expect=1)
    (dataset,) = doc["datasets"]
    assert [r["snapshot"] for r in dataset["restorable"]] == ["s0", "s1"]
    assert problem_kinds(doc) == {files["I29"]: {"orphan"}}


def test_a_flipped_payload_byte_is_reported_with_offset_and_never_restored(
    zfs_release_host, zverify_in_release_host, seed
):
    host, zverify = zfs_release_host, zverify_in_release_host
    ds, cold, _, files = seed
    arch = copy_of(host, cold, "flipped")
    at = flip_byte(host, f"{arch}/{files['I29']}", -20000)  # inside the last WRITE payloads
    doc = zv(host, zverify, "cold", "check", "--json", arch, expect=1)
    (bad,) = [f for f in doc["files"] if f["file"] == files["I29"]]
    (problem,) = bad["problems"]
    assert problem["kind"] == "damaged" and not bad["valid"]
    start, end = map(int, re.search(r"bytes (\d+)\.\.(\d+)", problem["message"]).groups())
    assert start <= at < end
    (dataset,) = doc["datasets"]
    assert [r["snapshot"] for r in dataset["restorable"]] == ["s0", "s1", "s2"]
    target = f"{ds.name.split('/')[0]}/never"
    r = host.run([*zverify, "cold", "restore", "--snapshot", "s9", arch, target])
    assert r.returncode == 1 and "cannot be restored" in r.stderr
    assert host.run(["zfs", "list", target]).returncode != 0  # nothing was received


def test_truncated_renamed_and_lying_files(zfs_release_host, zverify_in_release_host, seed):
    host, zverify = zfs_release_host, zverify_in_release_host
    _, cold, _, files = seed
    arch = copy_of(host, cold, "mixed")
    host.run(["truncate", "-s", "-1000", f"{arch}/{files['I29']}"], check=True)
    enc = files["full"].split("@")[0]
    liar = f"{enc}@s5-@s6.zfsinc"  # really the -i @0 -> @1 stream
    host.run(["mv", f"{arch}/{files['i01']}", f"{arch}/{liar}"], check=True)
    doc = zv(host, zverify, "cold", "check", "--json", arch, expect=1)
    kinds = problem_kinds(doc)
    assert kinds[files["I29"]] == {"truncated"}
    assert kinds[liar] == {"name-mismatch"}
    (dataset,) = doc["datasets"]  # chains go by GUID: the misnamed stream still counts
    assert [r["snapshot"] for r in dataset["restorable"]] == ["s0", "s1", "s2"]


def test_a_send_killed_with_sigkill_leaves_only_a_partial(zfs_host, zfs_pool, zverify_in_zfs_host):
    host, zverify = zfs_host, zverify_in_zfs_host
    ds = zfs_pool.dataset("big")
    snap_with_data(host, ds, "b0", size_kib=96 * 1024)
    cold = "/root/killed"
    host.run(["sh", "-c", f"rm -rf {cold} && mkdir {cold}"], check=True)
    send = shlex.join([*zverify, "cold", "send", "--no-progress", ds.name, cold])
    script = (
        f"{send} & pid=$!; n=0; "
        f"while [ ! -s {cold}/*.partial ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1)); done; "
        "kill -9 $pid; wait $pid; echo killed=$?; sleep 2"
    )
    out = host.run(["sh", "-c", script], timeout=600, check=True).stdout
    assert "killed=137" in out, out
    doc = zv(host, zverify, "cold", "check", "--json", cold, expect=1)
    (partial,) = doc["files"]
    assert partial["kind"] == "partial" and partial["file"].endswith(".zfsfull.partial")
    assert doc["datasets"] == []  # never part of a chain
    again = host.run([*zverify, "cold", "send", "--no-progress", ds.name, cold])
    assert again.returncode == 2 and "interrupted" in again.stderr


def test_a_send_into_a_full_filesystem_leaves_the_archive_intact(
    zfs_host, zfs_pool, zverify_in_zfs_host
):
    host, zverify = zfs_host, zverify_in_zfs_host
    ds = zfs_pool.dataset("fills")
    snap_with_data(host, ds, "f0", size_kib=256)
    mnt = "/mnt/small"
    small = f"{mnt}/cold"  # not the root: ext4 keeps lost+found there
    host.run(
        ["sh", "-c", f"modprobe loop; umount {mnt} 2>/dev/null; rm -f /root/small.img; "
         f"truncate -s 8M /root/small.img && mkfs.ext4 -q /root/small.img && "
         f"mkdir -p {mnt} && mount -o loop /root/small.img {mnt} && mkdir {small}"],
        check=True,
    )  # fmt: skip
    try:
        zv(host, zverify, "cold", "send", "--no-progress", ds.name, small)
        snap_with_data(host, ds, "f1", size_kib=12 * 1024)  # more than the 6 MiB left
        r = host.run([*zverify, "cold", "send", "--no-progress", ds.name, small], timeout=600)
        assert r.returncode == 2 and "No space left" in r.stderr, r.stderr
        left = host.run(["ls", "-A", small], check=True).stdout.split()
        assert not [n for n in left if n.endswith(".partial")]
        doc = zv(host, zverify, "cold", "check", "--json", small)
        (dataset,) = doc["datasets"]
        assert [r["snapshot"] for r in dataset["restorable"]] == ["f0"]
    finally:
        host.run(["umount", mnt])


def test_the_relay_keeps_a_record_changed_after_checking_from_the_kernel(
    zfs_release_host, zverify_in_release_host, seed
):
    """A file damaged between the check and its receive: receive_file stops at the bad
    record and kills the receive; the kernel applied nothing (no dataset appears)."""
    host, zverify = zfs_release_host, zverify_in_release_host
    ds, cold, _, files = seed
    arch = copy_of(host, cold, "relay")
    flip_byte(host, f"{arch}/{files['full']}", -3000)
    target = f"{ds.name.split('/')[0]}/relayed"
    code = (
        "import sys\n"
        "from zverify.cold.restore import receive_file\n"
        "from zverify.errors import UnrestorableError\n"
        "try:\n    receive_file(sys.argv[1], sys.argv[2])\n"
        "except UnrestorableError as err:\n    print('refused:', err)\n"
    )
    out = host.run([*zverify[:-2], "-c", code, f"{arch}/{files['full']}", target], check=True)
    assert "refused:" in out.stdout and "changed since it was checked" in out.stdout
    assert host.run(["zfs", "list", target]).returncode != 0


def test_prune_keeps_the_new_full_and_refuses_when_it_is_damaged(
    zfs_release_host, zverify_in_release_host, seed
):
    host, zverify = zfs_release_host, zverify_in_release_host
    ds, cold, _, files = seed
    arch = copy_of(host, cold, "prune")
    snap_with_data(host, ds, "s10", size_kib=48)
    new = zv(host, zverify, "cold", "send", "--no-progress", "--json", "--full", ds.name, arch)
    new_full = new["sent"]["file"]
    # the old chain first went on to @s10, so that its streams prove it older than the new full
    link = new["linked"]["file"]
    assert link == files["I29"].replace("s2-@s9", "s9-@s10"), new
    # the newer full damaged: prune deletes nothing
    damaged = copy_of(host, arch, "prune-damaged")
    flip_byte(host, f"{damaged}/{new_full}", -3000)
    before = host.run(["ls", damaged], check=True).stdout
    r = host.run([*zverify, "cold", "prune", "--yes", damaged])
    assert r.returncode == 1 and "REFUSED" in r.stdout
    assert host.run(["ls", damaged], check=True).stdout == before
    # intact: dry run, then --yes with a trial receive
    plan = zv(host, zverify, "cold", "prune", "--json", arch)
    (d,) = plan["datasets"]
    old = [link, *(files[k] for k in ("I29", "i12", "i01", "full"))]
    assert d["remove"] == old and d["newest_kept"]["snapshot"] == "s10"
    scratch = f"{ds.name.split('/')[0]}/scratch"
    done = zv(host, zverify, "cold", "prune", "--json", "--yes", "--trial-receive", scratch, arch)
    (d,) = done["datasets"]
    assert d["deleted"] == old
    assert sorted(d["released"]) == sorted(
        f"{ds.name}#zverify-{s}"
        for s in ("s0", "s1", "s2", "s9")  # @s10's is the new full's
    )
    assert host.run(["zfs", "list", scratch]).returncode != 0  # the trial was destroyed
    left = [n for n in host.run(["ls", arch], check=True).stdout.split("\n") if n]
    assert left == [new_full, f"{new_full}.json"]
    target = f"{ds.name.split('/')[0]}/after prune"
    zv(host, zverify, "cold", "restore", "--no-progress", arch, target)
    assert guid(host, f"{target}@s10") == guid(host, f"{ds.name}@s10")


@pytest.mark.parametrize(
    "kind", [pytest.param("raw", marks=pytest.mark.release_sample), "compressed"]
)
def test_encrypted_raw_and_compressed_sends_restore_by_guid(
    zfs_release_host, zfs_release_tank, zverify_in_release_host, kind
):
    host, zverify, zfs_pool = zfs_release_host, zverify_in_release_host, zfs_release_tank
    if kind == "raw":
        ds = zfs_pool.dataset("secret", encrypted=True)
    else:
        ds = zfs_pool.dataset("packed", compression="lz4")
    for snap in ("c0", "c1"):
        host.run(["sh", "-c", f"seq 1 40000 > '{ds.mountpoint}/{snap}.txt'"], check=True)
        host.run(["zfs", "snapshot", f"{ds.name}@{snap}"], check=True)
    cold = f"/root/{kind}"
    host.run(["sh", "-c", f"rm -rf {cold} && mkdir {cold}"], check=True)
    flag = "--raw" if kind == "raw" else "--compressed"
    zv(host, zverify, "cold", "send", "--no-progress", flag, "--snapshot", "c0", ds.name, cold)
    zv(host, zverify, "cold", "send", "--no-progress", flag, ds.name, cold)
    zv(host, zverify, "cold", "check", cold)
    target = f"{zfs_pool.name}/{kind}-back"
    doc = zv(host, zverify, "cold", "restore", "--no-progress", "--json", cold, target)
    # the document names the OpenZFS that received: this VM's userland and module
    assert [f"zfs-{host.openzfs}", f"zfs-kmod-{host.openzfs}"] == doc["openzfs"], doc["openzfs"]
    for snap in ("c0", "c1"):
        assert guid(host, f"{target}@{snap}") == guid(host, f"{ds.name}@{snap}")
    if kind == "raw":  # still encrypted, with no key loaded: received raw
        enc = host.run(["zfs", "get", "-Hp", "-o", "value", "encryption", target], check=True)
        assert enc.stdout.strip() == "aes-256-gcm"


def test_hold_moves_forward_and_prune_releases_it(zfs_host, zfs_pool, zverify_in_zfs_host):
    host, zverify = zfs_host, zverify_in_zfs_host
    ds = zfs_pool.dataset("held")

    def holds(snap: str) -> str:
        return host.run(["zfs", "holds", "-H", f"{ds.name}@{snap}"], check=True).stdout

    for snap in ("h0", "h1"):
        snap_with_data(host, ds, snap)
    cold = "/root/held"
    host.run(["sh", "-c", f"rm -rf {cold} && mkdir {cold}"], check=True)
    first = zv(
        host,
        zverify,
        "cold",
        "send",
        "--no-progress",
        "--json",
        "--hold",
        "--snapshot",
        "h0",
        ds.name,
        cold,
    )
    assert first["sent"]["hold"] == f"{ds.name}@h0" and "zverify-cold" in holds("h0")
    zv(host, zverify, "cold", "send", "--no-progress", "--hold", ds.name, cold)
    assert "zverify-cold" in holds("h1") and "zverify-cold" not in holds("h0")  # moved on
    refused = host.run(["zfs", "destroy", f"{ds.name}@h1"])
    assert refused.returncode != 0  # the base of the next incremental cannot be destroyed
    snap_with_data(host, ds, "h2")
    zv(host, zverify, "cold", "send", "--no-progress", "--hold", "--full", ds.name, cold)
    # the link to @h2 that --full archives first moved the hold on, as any incremental does
    assert "zverify-cold" not in holds("h1") and "zverify-cold" in holds("h2")
    done = zv(host, zverify, "cold", "prune", "--no-progress", "--json", "--yes", cold)
    (d,) = done["datasets"]
    assert len(d["deleted"]) == 3 and d["released"] == []  # the old chain and its link
    assert "zverify-cold" in holds("h2")
