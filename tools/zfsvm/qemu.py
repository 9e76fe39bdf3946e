"""The qemu command line for the test VM, and the choice between KVM and TCG.

KVM is used only when it demonstrably boots the guest: on hosts whose /dev/kvm
is PVM, a stock Debian kernel aborts or hangs under it, so ``auto`` tries KVM
with a short deadline, falls back to TCG (``-accel tcg,thread=multi -cpu max``)
on any failure, and remembers which one booted per host kernel and qemu binary
in the cache.
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

from tools.zfsvm import config

KERNEL_ARGS = "console=ttyS0 root=/dev/vda rw rootfstype=ext4 init=/sbin/zvinit panic=-1 loglevel=4"
ACCEL_ARGS = {
    "kvm": ["-accel", "kvm", "-cpu", "host"],
    "tcg": ["-accel", "tcg,thread=multi", "-cpu", "max"],
}


@dataclass
class Share:
    tag: str  # mounted in the guest at /zv/<tag without the "zv" prefix>
    path: Path
    readonly: bool = True


@dataclass
class MachineSpec:
    image: Path
    socket: Path
    console_log: Path
    scratch: list[Path]
    shares: list[Share] = field(default_factory=list)
    memory_mib: int = 2048
    cpus: int = max(1, min(os.cpu_count() or 1, 4))


def command(spec: MachineSpec, accel: str) -> list[str]:
    cmd = [
        "qemu-system-x86_64",
        "-name",
        "zverify-zfs",
        "-nodefaults",
        "-display",
        "none",
        "-no-reboot",
        "-m",
        str(spec.memory_mib),
        "-smp",
        str(spec.cpus),
        *ACCEL_ARGS[accel],
        "-kernel",
        str(spec.image / "vmlinuz"),
        "-initrd",
        str(spec.image / "initrd.img"),
        "-append",
        KERNEL_ARGS,
        "-serial",
        f"file:{spec.console_log}",
        "-nic",
        "none",
        "-drive",
        f"file={spec.image / 'rootfs.img'},format=raw,if=virtio,snapshot=on",
    ]
    for disk in spec.scratch:
        # Throwaway disks: ignoring flushes is safe and much faster under TCG.
        cmd += ["-drive", f"file={disk},format=raw,if=virtio,cache=unsafe"]
    for share in spec.shares:
        ro = ",readonly=on" if share.readonly else ""
        cmd += ["-virtfs", f"local,path={share.path},mount_tag={share.tag},security_model=none{ro}"]
    cmd += [
        "-device",
        "virtio-serial-pci",
        "-chardev",
        f"socket,id=zvagent,path={spec.socket},server=on,wait=off",
        "-device",
        "virtserialport,chardev=zvagent,name=zvagent",
    ]
    return cmd


def _probe_file() -> Path:
    return config.cache_root() / "accel.json"


def _host_id() -> str:
    return f"{platform.release()}|{os.path.realpath(_which_qemu())}"


def _which_qemu() -> str:
    import shutil

    return shutil.which("qemu-system-x86_64") or "qemu-system-x86_64"


def kvm_usable_device() -> bool:
    return os.path.exists("/dev/kvm") and os.access("/dev/kvm", os.R_OK | os.W_OK)


def remembered_accel() -> str | None:
    try:
        return json.loads(_probe_file().read_text()).get(_host_id())
    except (OSError, ValueError):
        return None


def remember_accel(accel: str) -> None:
    """Best effort: called with a VM already running, so a cache we cannot write must not raise."""
    path = _probe_file()
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    data[_host_id()] = accel
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1))
    except OSError:
        pass  # only costs a new probe next time


def accel_candidates() -> list[str]:
    """Accelerators to try, in order: ``$ZVERIFY_VM_ACCEL`` (kvm|tcg|auto) decides."""
    wanted = os.environ.get("ZVERIFY_VM_ACCEL", "auto")
    if wanted in ACCEL_ARGS:
        return [wanted]
    if not kvm_usable_device():
        return ["tcg"]
    # A remembered "kvm" keeps TCG behind it, so a KVM boot that fails costs time, not the
    # session; a remembered "tcg" is final, as each failed KVM probe costs BOOT_TIMEOUT["kvm"].
    known = remembered_accel()
    return ["tcg"] if known == "tcg" else ["kvm", "tcg"]


def expected_accel() -> str:
    """Best guess of the accelerator without booting (for the pytest header)."""
    cands = accel_candidates()
    if len(cands) == 1 or remembered_accel() == "kvm":
        return cands[0]
    return "kvm or tcg, to be probed"
