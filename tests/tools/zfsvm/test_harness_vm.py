"""The ZFS backend itself: commands round-trip; pools and datasets get the asked properties."""

from __future__ import annotations

import subprocess

import pytest

pytestmark = pytest.mark.zfs


def prop(host, name, dataset):
    return host.run(["zfs", "get", "-Hp", "-o", "value", name, dataset], check=True).stdout.strip()


def test_run_returns_status_and_both_streams(zfs_host):
    r = zfs_host.run(["sh", "-c", "printf out; printf err >&2; exit 3"])
    assert (r.returncode, r.stdout, r.stderr) == (3, "out", "err")


def test_run_passes_stdin_and_raises_like_subprocess(zfs_host):
    assert zfs_host.run(["cat"], input="piped").stdout == "piped"
    with pytest.raises(subprocess.CalledProcessError):
        zfs_host.run(["false"], check=True)
    with pytest.raises(subprocess.TimeoutExpired):
        zfs_host.run(["sleep", "30"], timeout=1)


def test_openzfs_is_loaded(zfs_host):
    out = zfs_host.run(["zfs", "version"], check=True).stdout
    assert "zfs-kmod" in out


def test_pool_and_dataset_properties(zfs_host, zfs_pool):
    ds = zfs_pool.dataset("props", compression="lz4", recordsize="16K", xattr="sa", acltype="posix")
    assert prop(zfs_host, "compression", ds.name) == "lz4"
    assert prop(zfs_host, "recordsize", ds.name) == "16384"
    assert prop(zfs_host, "xattr", ds.name) == "sa"
    assert prop(zfs_host, "acltype", ds.name) == "posix"
    zfs_host.run(["touch", f"{ds.mountpoint}/f"], check=True)


def test_encrypted_dataset_with_keyfile(zfs_host, zfs_pool):
    ds = zfs_pool.dataset("secret", encrypted=True)
    assert prop(zfs_host, "encryption", ds.name) == "aes-256-gcm"
    assert prop(zfs_host, "keystatus", ds.name) == "available"
    zfs_host.run(["zfs", "unmount", ds.name], check=True)
    zfs_host.run(["zfs", "unload-key", ds.name], check=True)
    zfs_host.run(["zfs", "load-key", ds.name], check=True)
