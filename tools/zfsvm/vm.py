"""Boot the cached image under qemu and run commands in it through the guest agent.

One ``ZfsVM`` is one boot: the root image is attached ``snapshot=on`` (nothing
is written back), the scratch disks are fresh sparse files, and the run
directory (control share, agent socket, console log) is deleted on shutdown.
``run()`` mirrors ``subprocess.run``: it returns ``subprocess.CompletedProcess``
and raises ``CalledProcessError`` / ``TimeoutExpired`` the same way.
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tools.zfsvm import config, image, qemu
from tools.zfsvm.errors import HarnessError

BOOT_TIMEOUT = {"kvm": 30.0, "tcg": 420.0}
# Host-side slack on top of a command's own timeout before the VM is declared hung.
GRACE = 120.0
# sendall's timeout covers the whole message (stdin included), not each chunk.
SEND_TIMEOUT = 60.0
KILL_WAIT = 30.0
GUEST_ROOT = "/zv"
PR_SET_PDEATHSIG = 1


class _Channel:
    """JSON lines over the agent's unix socket, with deadlines and a liveness check on qemu.

    Every socket and decoding failure becomes a ``HarnessError`` here, at the source: a dying
    qemu shows up as ECONNRESET/EPIPE, and an ``OSError`` escaping to ``ZfsVM.boot()`` would
    skip its fallback to the next accelerator.
    """

    def __init__(self, sock: socket.socket, proc: subprocess.Popen):
        self.sock, self.proc = sock, proc
        self.buf = b""

    @classmethod
    def open(cls, path: Path, proc: subprocess.Popen, deadline: float) -> _Channel:
        """Connect to qemu's socket, retrying until it listens, qemu exits or the deadline."""
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                out = path.with_name("qemu.log").read_text(errors="replace")
                raise HarnessError(f"qemu exited at once ({proc.returncode}): {out.strip()[-800:]}")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(1.0)
            try:
                sock.connect(str(path))
            except OSError:  # not created or not listening yet
                sock.close()
                time.sleep(0.1)
                continue
            return cls(sock, proc)
        raise HarnessError("qemu did not open the agent socket in time")

    @contextmanager
    def _guard(self, what: str):
        try:
            yield
        except OSError as exc:
            # Say that qemu died rather than only "connection reset" when that is the cause.
            status = self.proc.poll()
            dead = "" if status is None else f"qemu exited with status {status}; "
            raise HarnessError(f"{dead}agent channel {what} failed: {_describe(exc)}") from exc

    def send(self, msg: dict) -> None:
        data = (json.dumps(msg) + "\n").encode()
        with self._guard("send"):
            # The receive timeout (1 s) is too short for a large stdin into a slow guest.
            self.sock.settimeout(SEND_TIMEOUT)
            try:
                self.sock.sendall(data)
            finally:
                self.sock.settimeout(1.0)

    def recv(self, deadline: float) -> dict | None:
        """Next message, or None when the deadline passes; raises if qemu has exited."""
        while b"\n" not in self.buf:
            if self.proc.poll() is not None:
                raise HarnessError(f"qemu exited with status {self.proc.returncode}")
            if time.monotonic() > deadline:
                return None
            self.buf += self._read()
        line, self.buf = self.buf.split(b"\n", 1)
        return _decode(line)

    def _read(self) -> bytes:
        """What arrived within the socket's 1 s timeout (maybe nothing)."""
        with self._guard("receive"):
            try:
                chunk = self.sock.recv(1 << 20)
            except TimeoutError:
                return b""
        if not chunk:
            raise HarnessError("agent channel closed by qemu")
        return chunk

    def close(self) -> None:
        self.sock.close()


def _decode(line: bytes) -> dict:
    """One agent message; anything else means the channel is not talking to our agent."""
    try:
        msg = json.loads(line)
    except ValueError as exc:  # includes UnicodeDecodeError
        raise HarnessError(f"garbage on the agent channel: {line[:200]!r}") from exc
    if not isinstance(msg, dict):
        raise HarnessError(f"unexpected message on the agent channel: {line[:200]!r}")
    return msg


def _describe(exc: BaseException) -> str:
    """Exception type and first line of its message, for one-line logs."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class ZfsVM:
    """A booted test VM. Use ``with ZfsVM.boot() as vm: vm.run([...])``."""

    kind = "vm"
    python = ("python3",)
    repo = f"{GUEST_ROOT}/repo"

    def __init__(self, proc, channel, rundir: Path, accel: str, scratch_count: int):
        self.proc, self.channel, self.rundir, self.accel = proc, channel, rundir, accel
        self.detail = accel
        self.release = config.DEFAULT_RELEASE
        self.openzfs = ""  # the package version inside, e.g. 2.3.2-2~bpo12+2
        self.scratch_devices = [f"/dev/vd{chr(ord('b') + i)}" for i in range(scratch_count)]
        self.exchange_host = rundir / "ctl" / "x"
        self.exchange_guest = f"{GUEST_ROOT}/ctl/x"
        self.exchange_host.mkdir()
        self._next_id = 1

    # -- boot -------------------------------------------------------------------------------
    @classmethod
    def boot(
        cls,
        scratch_disks: int = 2,
        scratch_gib: int = 4,
        memory_mib: int = 2048,
        release: str = config.DEFAULT_RELEASE,
    ) -> ZfsVM:
        imgdir = config.image_dir(release)
        if not image.is_built(imgdir):
            raise HarnessError(
                f"OpenZFS {release} VM image not built ({imgdir}): run `python -m tools.zfsvm"
                f" build --release {release}` as root (8-15 min once, then cached)"
            )
        image.require_tools(["qemu-system-x86_64"])
        warn_missing_extension()
        pydeps = image.ensure_pydeps()
        machine = (imgdir, pydeps, scratch_disks, scratch_gib, memory_mib)
        candidates = qemu.accel_candidates()
        failures: list[_Failure] = []
        for i, accel in enumerate(candidates):
            start = time.monotonic()
            try:
                vm = cls._try_accel(accel, *machine)
            except Exception as exc:  # whatever went wrong, this accelerator did not boot here
                failures.append(_Failure(accel, time.monotonic() - start, exc))
                then = f"; trying {candidates[i + 1]}" if i + 1 < len(candidates) else ""
                image.log(f"{failures[-1].summary()}{then}")
                continue
            if len(candidates) > 1:  # this was a probe: next time, go straight to the answer
                qemu.remember_accel(accel)
            return vm
        raise HarnessError(_boot_failure(failures)) from failures[-1].exc

    @classmethod
    def _try_accel(cls, accel, imgdir, pydeps, scratch_disks, scratch_gib, memory_mib) -> ZfsVM:
        """One boot attempt in a fresh run directory, which is removed if the attempt fails."""
        rundir = Path(tempfile.mkdtemp(prefix="zvvm-"))
        try:
            spec = _machine_spec(imgdir, rundir, pydeps, scratch_disks, scratch_gib, memory_mib)
            return cls._start(spec, accel, scratch_disks)
        except BaseException:
            shutil.rmtree(rundir, ignore_errors=True)
            raise

    @classmethod
    def _start(cls, spec: qemu.MachineSpec, accel: str, scratch_count: int) -> ZfsVM:
        start = time.monotonic()
        # One deadline for socket and agent, so a KVM probe that hangs costs BOOT_TIMEOUT["kvm"].
        deadline = start + BOOT_TIMEOUT[accel]
        # qemu's own messages go to a file, not a pipe: nobody reads them during the session.
        with open(spec.console_log.with_name("qemu.log"), "wb") as qemu_log:
            proc = subprocess.Popen(
                qemu.command(spec, accel),
                stdin=subprocess.DEVNULL,
                stdout=qemu_log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        channel = None
        try:
            channel = _Channel.open(spec.socket, proc, deadline)
            _wait_hello(channel, deadline, spec.console_log)
            vm = cls(proc, channel, spec.console_log.parent, accel, scratch_count)
            vm.openzfs = image.openzfs_version(spec.image)
            vm.release = ".".join(vm.openzfs.split(".")[:2])
            vm.detail = f"{accel}, OpenZFS {vm.openzfs}"
        except BaseException:  # not only HarnessError: no failure may leave qemu running
            _kill(proc)
            if channel is not None:
                channel.close()
            raise
        image.log(f"VM up ({accel}) in {time.monotonic() - start:.1f}s")
        return vm

    # -- commands ---------------------------------------------------------------------------
    def run(
        self,
        argv,
        *,
        timeout: float = 600,
        check: bool = False,
        input=None,
        env=None,
        cwd: str | None = None,
        text: bool = True,
    ) -> subprocess.CompletedProcess:
        """Run argv in the guest (cwd defaults to the shared checkout) and wait for it."""
        argv = [str(a) for a in argv]
        req = {"op": "run", "argv": argv, "timeout": timeout, "env": env or {}, "cwd": cwd}
        if input is not None:
            data = input.encode() if isinstance(input, str) else input
            req["stdin_b64"] = base64.b64encode(data).decode()
        reply = self._request(req, timeout + GRACE)
        out, err = (base64.b64decode(reply[k]) for k in ("stdout_b64", "stderr_b64"))
        if text:
            out, err = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
        if reply["timed_out"]:
            raise subprocess.TimeoutExpired(argv, timeout, out, err)
        result = subprocess.CompletedProcess(argv, reply["rc"], out, err)
        if check:
            result.check_returncode()
        return result

    def sh(self, script: str, **kw) -> subprocess.CompletedProcess:
        """Run a ``sh -c`` script (``set -e`` applied)."""
        return self.run(["sh", "-ec", script], **kw)

    def _request(self, req: dict, host_timeout: float) -> dict:
        req["id"] = self._next_id
        self._next_id += 1
        self.channel.send(req)
        deadline = time.monotonic() + host_timeout
        while True:
            msg = self.channel.recv(deadline)
            if msg is None:
                self.kill()
                raise HarnessError(
                    f"guest agent gave no answer within {host_timeout:.0f}s; VM killed"
                )
            if msg.get("id") == req["id"]:
                return msg

    # -- shutdown ---------------------------------------------------------------------------
    def shutdown(self, timeout: float = 60) -> None:
        """Ask the agent to power off; kill qemu if it has not exited in time."""
        if self.proc.poll() is None:
            try:
                self._request({"op": "shutdown"}, 30)
                self.proc.wait(timeout)
            except (HarnessError, OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def kill(self) -> None:
        _kill(self.proc)
        self.channel.close()
        if os.environ.get("ZVERIFY_VM_KEEP") != "1":
            shutil.rmtree(self.rundir, ignore_errors=True)

    def __enter__(self) -> ZfsVM:
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()


def _machine_spec(imgdir, rundir: Path, pydeps, n_scratch, gib, memory_mib) -> qemu.MachineSpec:
    ctl = rundir / "ctl"
    ctl.mkdir()
    shutil.copy2(config.AGENT_SCRIPT, ctl / "agent.py")
    scratch = []
    for i in range(n_scratch):
        disk = rundir / f"scratch{i}.img"
        with open(disk, "wb") as fh:
            fh.truncate(gib * 1024**3)
        scratch.append(disk)
    shares = [
        qemu.Share("zvctl", ctl, readonly=False),
        qemu.Share("zvrepo", config.REPO_ROOT),
        qemu.Share("zvpydeps", pydeps),
    ]
    return qemu.MachineSpec(
        image=imgdir,
        socket=rundir / "agent.sock",
        console_log=rundir / "console.log",
        scratch=scratch,
        shares=shares,
        memory_mib=memory_mib,
    )


def _wait_hello(channel: _Channel, deadline: float, console_log: Path) -> None:
    """Ping until the agent answers: its hello can be lost if it starts before we connect."""
    try:
        while time.monotonic() < deadline:
            channel.send({"op": "ping", "id": -1})
            msg = channel.recv(min(deadline, time.monotonic() + 10))
            if msg is not None:
                return
    except HarnessError as exc:
        raise HarnessError(_with_console(str(exc), console_log)) from exc
    raise HarnessError(_with_console("no answer from the guest agent in time", console_log))


def _with_console(problem: str, console_log: Path) -> str:
    # The console tail goes on later lines, so the first line stays a one-line summary.
    return f"{problem}\nconsole (last lines):\n{_tail(console_log)}"


@dataclass
class _Failure:
    """One accelerator that did not boot, how long it took to find out, and why."""

    accel: str
    seconds: float
    exc: BaseException

    def summary(self) -> str:
        return f"boot with {self.accel} failed after {self.seconds:.1f}s: {_describe(self.exc)}"


def _boot_failure(failures: list[_Failure]) -> str:
    """The error when no accelerator booted: each one's failure, in the order tried."""
    tried = ", ".join(f.accel for f in failures)
    parts = [f"the VM did not boot with any accelerator ({tried}):"]
    for f in failures:
        detail = str(f.exc) if isinstance(f.exc, HarnessError) else _describe(f.exc)
        parts.append(f"- {f.accel} ({f.seconds:.1f}s): {detail}")
    return "\n".join(parts)


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "".join(path.read_text(errors="replace").splitlines(True)[-lines:])
    except OSError:
        return "(no console log)"


def _die_with_parent() -> None:
    """In the qemu child: get SIGKILL if the test process dies, so no VM outlives its session."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _kill(proc) -> None:
    if proc.poll() is None:
        proc.kill()
        try:
            proc.wait(KILL_WAIT)
        except subprocess.TimeoutExpired:
            # Bounded even if qemu is stuck in the kernel: better a stray process than a hang.
            image.log(f"qemu (pid {proc.pid}) still alive {KILL_WAIT:.0f}s after SIGKILL")


def warn_missing_extension() -> None:
    """zverify's C extension is built on the host (CI does it); say so early if it is absent."""
    if not extension_built():
        image.log(
            "warning: zverify/_zvcore*.so not found in the checkout: build it first with "
            "`pip install -e .` or `python setup.py build_ext --inplace`"
        )


def extension_built() -> bool:
    return any((config.REPO_ROOT / "zverify").glob("_zvcore*.so"))
