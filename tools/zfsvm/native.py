"""The native backend: a host with /dev/zfs runs the same commands locally.

It offers the VM's interface (``run``, ``sh``, ``scratch_devices``, ``exchange_*``,
``python``, ``repo``) so tests do not care where ZFS runs. Scratch "devices" are
sparse files in a private temp directory, so a test pool never touches a real disk.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tools.zfsvm import config


class NativeZfsHost:
    kind = "native"
    detail = "native"

    def __init__(self, scratch_disks: int = 2, scratch_gib: int = 4):
        self.tmp = Path(tempfile.mkdtemp(prefix="zvnative-"))
        self.scratch_devices = []
        for i in range(scratch_disks):
            disk = self.tmp / f"scratch{i}.img"
            with open(disk, "wb") as fh:
                fh.truncate(scratch_gib * 1024**3)
            self.scratch_devices.append(str(disk))
        self.exchange_host = self.tmp / "x"
        self.exchange_host.mkdir()
        self.exchange_guest = str(self.exchange_host)
        self.python = (sys.executable,)
        self.repo = str(config.REPO_ROOT)
        # the host's own OpenZFS, as `zfs version` names it (the VM's says which image)
        found = self.run(["zfs", "version"]).stdout.split()
        self.openzfs = found[0].removeprefix("zfs-") if found else "unknown"
        self.release = ".".join(self.openzfs.split(".")[:2])

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
        full_env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        full_env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [self.repo, os.environ.get("PYTHONPATH")])
        )
        full_env.update(env or {})
        kw = {"encoding": "utf-8", "errors": "replace"} if text else {}
        return subprocess.run(
            [str(a) for a in argv],
            input=input,
            capture_output=True,
            check=check,
            timeout=timeout,
            env=full_env,
            cwd=cwd or self.repo,
            stdin=None if input is not None else subprocess.DEVNULL,
            **kw,
        )

    def sh(self, script: str, **kw) -> subprocess.CompletedProcess:
        return self.run(["sh", "-ec", script], **kw)

    def shutdown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()
