"""The harness's pure parts: cache path and key, accelerator, qemu command line, backend."""

from __future__ import annotations

from pathlib import Path

from tests.zfsvm import backend, config, qemu


def test_cache_root_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv("ZVERIFY_VM_CACHE", str(tmp_path))
    assert config.cache_root() == tmp_path
    assert config.image_dir().parent == tmp_path


def test_cache_is_outside_the_repo_by_default(monkeypatch):
    monkeypatch.delenv("ZVERIFY_VM_CACHE", raising=False)
    assert config.REPO_ROOT not in config.cache_root().parents


def test_image_key_depends_on_packages_and_suite(monkeypatch):
    key = config.image_key()
    assert config.image_key() == key
    monkeypatch.setattr(config, "ZFS_PACKAGES", "zfs-dkms something-else")
    changed = config.image_key()
    monkeypatch.setattr(config, "SUITE", "trixie")
    assert len({key, changed, config.image_key()}) == 3


def test_accel_env_override(monkeypatch):
    monkeypatch.setenv("ZVERIFY_VM_ACCEL", "tcg")
    assert qemu.accel_candidates() == ["tcg"]
    monkeypatch.setenv("ZVERIFY_VM_ACCEL", "auto")
    monkeypatch.setattr(qemu, "kvm_usable_device", lambda: False)
    assert qemu.accel_candidates() == ["tcg"]


def test_qemu_command_is_isolated_and_throwaway(tmp_path):
    spec = qemu.MachineSpec(
        image=tmp_path,
        socket=tmp_path / "s",
        console_log=tmp_path / "c",
        scratch=[tmp_path / "d0"],
        shares=[qemu.Share("zvrepo", Path("/r"))],
    )
    cmd = " ".join(qemu.command(spec, "tcg"))
    assert "snapshot=on" in cmd and "-nic none" in cmd and "-no-reboot" in cmd
    assert "tcg,thread=multi -cpu max" in cmd
    assert "mount_tag=zvrepo,security_model=none,readonly=on" in cmd


def test_backend_off_says_why(monkeypatch):
    monkeypatch.setenv("ZVERIFY_ZFS", "off")
    assert backend.availability().header() == "zfs: unavailable (disabled by ZVERIFY_ZFS=off)"
