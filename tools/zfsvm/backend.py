"""Decide where real-ZFS tests run: natively (``/dev/zfs``), in the VM, or not at all (and why).

``$ZVERIFY_ZFS`` = ``auto`` (default) | ``native`` | ``vm`` | ``off``. The decision
is made without booting anything, so it can be printed in the pytest header;
``open_host()`` then boots (VM) or sets up (native) the chosen backend.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from tools.zfsvm import config, image, qemu


@dataclass(frozen=True)
class Availability:
    kind: str  # "native", "vm" or "unavailable"
    detail: str  # accelerator for the VM, the reason when unavailable

    def header(self) -> str:
        if self.kind == "vm":
            return f"zfs: vm ({self.detail})"
        if self.kind == "native":
            return "zfs: native"
        return f"zfs: unavailable ({self.detail})"


def _native() -> Availability:
    if not os.path.exists("/dev/zfs"):
        return Availability("unavailable", "no /dev/zfs on this host")
    if os.geteuid() != 0:
        return Availability("unavailable", "/dev/zfs exists but tests are not running as root")
    if not shutil.which("zpool"):
        return Availability("unavailable", "/dev/zfs exists but zpool is not installed")
    return Availability("native", "native")


def _vm() -> Availability:
    if not shutil.which("qemu-system-x86_64"):
        return Availability(
            "unavailable", "qemu-system-x86_64 missing: apt-get install qemu-system-x86"
        )
    if not image.is_built():
        return Availability(
            "unavailable",
            f"VM image not built: run `python -m tools.zfsvm build` (cache {config.cache_root()})",
        )
    return Availability("vm", qemu.expected_accel())


def availability() -> Availability:
    mode = os.environ.get("ZVERIFY_ZFS", "auto")
    if mode == "off":
        return Availability("unavailable", "disabled by ZVERIFY_ZFS=off")
    if mode == "native":
        return _native()
    if mode == "vm":
        return _vm()
    native = _native()
    return native if native.kind == "native" else _vm()


def open_host(avail: Availability):
    """Start the backend ``avail`` names; the caller shuts it down."""
    if avail.kind == "native":
        from tools.zfsvm.native import NativeZfsHost

        return NativeZfsHost()
    from tools.zfsvm.vm import ZfsVM

    return ZfsVM.boot()
