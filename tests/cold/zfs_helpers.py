"""Helpers of the cold tests on real OpenZFS (test_zfs_send.py, test_zfs_archive.py, ...)."""

from __future__ import annotations

import json

FLIP_BYTE = (
    "import sys; p, at = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p, 'rb').read()); "
    "at = at if at >= 0 else len(b) + at; b[at] ^= 1; open(p, 'wb').write(bytes(b)); print(at)"
)


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


def flip_byte(host, path: str, at: int) -> int:
    """Flip one bit of the byte at offset at (negative: from the end); returns the offset."""
    return int(host.run(["python3", "-c", FLIP_BYTE, path, str(at)], check=True).stdout)


def assert_same_snapshot(host, zverify, source, target: str, snap: str) -> None:
    """`zverify compare` of snapshot snap of the source Dataset and of the restored target."""
    mounted = host.run(["zfs", "get", "-H", "-o", "value", "mounted", target], check=True)
    if mounted.stdout.strip() != "yes":
        host.run(["zfs", "mount", target], check=True)
    mnt = host.run(["zfs", "get", "-Hp", "-o", "value", "mountpoint", target], check=True)
    same = host.run(
        [*zverify, "compare", "--no-progress", f"{source.mountpoint}/.zfs/snapshot/{snap}",
         f"{mnt.stdout.strip()}/.zfs/snapshot/{snap}"],
        timeout=600,
    )  # fmt: skip
    assert same.returncode == 0, same.stdout + same.stderr
