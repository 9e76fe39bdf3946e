"""The harness's pure parts: cache path and key, accelerator, qemu command line, backend;
and the boot loop's fallback from KVM to TCG, with qemu and the guest faked (no VM, no image).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tools.zfsvm import backend, config, image, qemu, vm
from tools.zfsvm.errors import HarnessError


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


# -- accelerator fallback: no VM, no image; qemu and the guest are faked ----------------------


@pytest.fixture
def boot_env(monkeypatch, tmp_path):
    """boot() with everything but the accelerator loop faked; run dirs land in tmp_path/runs."""
    monkeypatch.setenv("ZVERIFY_VM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ZVERIFY_VM_ACCEL", "auto")
    monkeypatch.setattr(image, "is_built", lambda path=None: True)
    monkeypatch.setattr(image, "require_tools", lambda names: None)
    monkeypatch.setattr(image, "ensure_pydeps", lambda: tmp_path / "pydeps")
    monkeypatch.setattr(vm, "warn_missing_extension", lambda: None)
    monkeypatch.setattr(qemu, "kvm_usable_device", lambda: True)
    monkeypatch.setattr(qemu, "accel_candidates", lambda: ["kvm", "tcg"])
    (tmp_path / "runs").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "runs"))
    return tmp_path


def fake_start(monkeypatch, outcomes: dict):
    """Replace ZfsVM._start: raise or return outcomes[accel]; return the run dirs it was given."""
    rundirs = {}

    def _start(spec, accel, scratch_count):
        rundirs[accel] = spec.console_log.parent
        if isinstance(outcomes[accel], BaseException):
            raise outcomes[accel]
        return outcomes[accel]

    monkeypatch.setattr(vm.ZfsVM, "_start", staticmethod(_start))
    return rundirs


KVM_FAILURES = [
    ConnectionResetError(104, "Connection reset by peer"),
    BrokenPipeError(32, "Broken pipe"),
    OSError(5, "Input/output error"),
    json.JSONDecodeError("Expecting value", "\x00garbage", 0),
    subprocess.TimeoutExpired(["qemu-system-x86_64"], 30),
    HarnessError("qemu exited with status 1\nconsole (last lines):\nKernel panic"),
]


@pytest.mark.parametrize("error", KVM_FAILURES, ids=lambda e: type(e).__name__)
def test_boot_falls_back_to_tcg_on_any_kvm_failure(boot_env, monkeypatch, capsys, error):
    sentinel = object()
    rundirs = fake_start(monkeypatch, {"kvm": error, "tcg": sentinel})
    assert vm.ZfsVM.boot(scratch_disks=1, scratch_gib=1) is sentinel
    assert not rundirs["kvm"].exists()  # the failed probe's run dir is gone
    assert qemu.remembered_accel() == "tcg"
    # Exactly one log line for the failed probe, naming the accelerator and what happened.
    log = capsys.readouterr().err.splitlines()
    failed = [line for line in log if "boot with kvm failed" in line]
    assert len(failed) == 1 and "trying tcg" in failed[0]
    assert "Kernel panic" not in "\n".join(log)
    shutil.rmtree(rundirs["tcg"])  # the sentinel "VM" would own it


def test_boot_names_every_failure_and_remembers_nothing(boot_env, monkeypatch):
    kvm_error = ConnectionResetError(104, "Connection reset by peer")
    tcg_error = HarnessError("no answer from the guest agent within the boot timeout")
    rundirs = fake_start(monkeypatch, {"kvm": kvm_error, "tcg": tcg_error})
    with pytest.raises(HarnessError) as info:
        vm.ZfsVM.boot(scratch_disks=1, scratch_gib=1)
    msg = str(info.value)
    assert "- kvm (" in msg and "ConnectionResetError" in msg
    assert "- tcg (" in msg and "no answer from the guest agent" in msg
    assert not any(path.exists() for path in rundirs.values())
    # Nothing booted, so nothing is known about this host: do not record "tcg".
    assert qemu.remembered_accel() is None


def test_remembered_kvm_still_falls_back_and_tcg_is_final(monkeypatch, tmp_path):
    monkeypatch.setenv("ZVERIFY_VM_CACHE", str(tmp_path))
    monkeypatch.setenv("ZVERIFY_VM_ACCEL", "auto")
    monkeypatch.setattr(qemu, "kvm_usable_device", lambda: True)
    assert qemu.accel_candidates() == ["kvm", "tcg"]
    qemu.remember_accel("kvm")
    assert qemu.accel_candidates() == ["kvm", "tcg"]
    qemu.remember_accel("tcg")
    assert qemu.accel_candidates() == ["tcg"]


def test_remember_accel_never_raises(monkeypatch, tmp_path):
    # Called with a VM already running: an unwritable cache must not leak that VM.
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("ZVERIFY_VM_CACHE", str(tmp_path / "file" / "cache"))
    qemu.remember_accel("tcg")
    assert qemu.remembered_accel() is None


# -- the agent channel: socket errors become HarnessError at the source -----------------------


class FakeProc:
    """Stands in for the qemu Popen: alive until killed."""

    pid = 0

    def __init__(self, *args, **kwargs):
        self.returncode = None
        self.killed = False

    def poll(self):
        return self.returncode

    def kill(self):
        self.killed, self.returncode = True, -9

    def wait(self, timeout=None):
        return self.returncode


def channel_on(sock) -> vm._Channel:
    ch = vm._Channel.__new__(vm._Channel)  # skip connecting: the test owns both ends
    ch.sock, ch.proc, ch.buf = sock, FakeProc(), b""
    sock.settimeout(1.0)
    return ch


@pytest.fixture
def pair():
    ours, peer = socket.socketpair()
    yield ours, peer
    ours.close()
    peer.close()


def test_channel_recv_turns_connection_reset_into_harness_error(pair):
    ours, peer = pair
    ours.sendall(b"unread")
    peer.close()  # closing with unread data resets the connection, as a dying qemu does
    with pytest.raises(HarnessError, match="ConnectionResetError"):
        channel_on(ours).recv(time.monotonic() + 5)


def test_channel_send_turns_broken_pipe_into_harness_error(pair):
    ours, peer = pair
    peer.close()
    with pytest.raises(HarnessError, match="BrokenPipeError"):
        channel_on(ours).send({"op": "ping", "id": -1})


def test_channel_turns_any_oserror_into_harness_error(pair, monkeypatch):
    ch = channel_on(pair[0])

    class BrokenSocket:
        def settimeout(self, t):
            pass

        def recv(self, n):
            raise OSError(5, "Input/output error")

        sendall = recv

    ch.sock = BrokenSocket()
    with pytest.raises(HarnessError, match="Input/output error"):
        ch.recv(time.monotonic() + 5)
    with pytest.raises(HarnessError, match="Input/output error"):
        ch.send({"op": "ping"})


def test_channel_rejects_garbage(pair):
    ours, peer = pair
    ch = channel_on(ours)
    peer.sendall(b'{"id": 0, "op": "hello"}\n\x00\xffnot json\n[1, 2]\n')
    assert ch.recv(time.monotonic() + 5) == {"id": 0, "op": "hello"}
    with pytest.raises(HarnessError, match="garbage"):
        ch.recv(time.monotonic() + 5)
    with pytest.raises(HarnessError, match="unexpected message"):
        ch.recv(time.monotonic() + 5)


# -- _start: whatever fails, qemu is killed, and a KVM probe stays within its deadline --------


def machine(tmp_path) -> qemu.MachineSpec:
    return qemu.MachineSpec(
        image=tmp_path, socket=tmp_path / "s", console_log=tmp_path / "c", scratch=[]
    )


def test_start_kills_qemu_whatever_the_failure(monkeypatch, tmp_path):
    procs = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: procs.append(FakeProc()) or procs[-1])
    spec = machine(tmp_path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(spec.socket))
    listener.listen()

    def reset(*args):
        raise ConnectionResetError(104, "Connection reset by peer")

    monkeypatch.setattr(vm, "_wait_hello", reset)
    try:
        with pytest.raises(OSError):
            vm.ZfsVM._start(spec, "kvm", 0)
    finally:
        listener.close()
    assert procs[0].killed


def test_kvm_probe_deadline_covers_the_socket_wait(monkeypatch, tmp_path):
    # qemu that never opens its socket: the probe ends at BOOT_TIMEOUT["kvm"], not later.
    procs = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: procs.append(FakeProc()) or procs[-1])
    monkeypatch.setitem(vm.BOOT_TIMEOUT, "kvm", 0.5)
    start = time.monotonic()
    with pytest.raises(HarnessError):
        vm.ZfsVM._start(machine(tmp_path), "kvm", 0)
    assert time.monotonic() - start < 5
    assert procs[0].killed
