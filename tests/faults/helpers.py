"""Run the installed `zverify` under the fault shim (shim.c) and read what the shim saw.

The shim appends "fired KIND N 0xSITE" to ZV_FAULT_LOG when it injected the fault (SITE:
the return address in _zvcore, for `addr2line -f -e zverify/_zvcore*.so SITE`), and at exit
"count KIND K" for the calls the core made; a run's log is the only way to tell a fault
that fired from one configured past the last call.
"""

import itertools
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

VERDICTS = ("IDENTICAL", "DIFFERENT")
RUN_TIMEOUT = 60  # seconds: a compare of a dozen entries that takes longer has hung


def sanitizer_reason() -> str | None:
    """Why not to run here, under scripts/asan.sh: LD_PRELOAD already holds libasan, whose
    allocator our malloc would sit in front of, and the installed `zverify` is the normal
    build, not the instrumented scratch copy."""
    if os.environ.get("ZVERIFY_SANITIZE"):
        return "sanitizer run (ZVERIFY_SANITIZE): the fault shim would stack on the sanitizer"
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        return "libasan is preloaded: the fault shim would stack on the sanitizer's malloc"
    return None


@dataclass(frozen=True)
class Trees:
    src: Path
    dst: Path
    # The symlink and the FIFO carry a trusted.* xattr (only root may set one; user.* is
    # refused on them): without it the core never reads a listing through llistxattr.
    special_xattrs: bool

    def compare(self, *options: str) -> tuple[str, ...]:
        """One walker and one hashing thread per tree: the order of the core's calls is then
        nearly fixed, so the N-th call is nearly the same site from run to run."""
        return ("compare", "--threads", "1", *options, str(self.src), str(self.dst))


@dataclass(frozen=True)
class Run:
    """One `zverify` run under the shim."""

    fault: str | None
    returncode: int
    stdout: str
    stderr: str
    fired: list[str]  # "KIND N" for each injected fault (at most one)
    sites: list[str]  # where in the core each one was called from
    counts: dict[str, int]  # KIND -> calls by the core (empty if it never loaded)

    def describe(self) -> str:
        at = [f"{f} at {site}" for f, site in zip(self.fired, self.sites, strict=True)]
        fired = ", ".join(at) or "not fired"
        tail = "\n".join(self.stderr.strip().splitlines()[-3:])
        return (
            f"ZV_FAULT={self.fault} ({fired}): exit {self.returncode}, "
            f"verdict {verdict(self.stdout)!r}\n  stdout: {self.stdout[:300]!r}\n"
            f"  stderr: {tail!r}"
        )


def verdict(stdout: str) -> str | None:
    """The verdict word on stdout, if any."""
    return next((word for word in VERDICTS if word in stdout), None)


@dataclass
class Harness:
    """The installed console script, the built shim, and a directory for the logs."""

    zverify: str
    shim: Path
    logs: Path
    _ids: Iterator[int] = field(default_factory=itertools.count)

    def run(self, fault: str | None, *args: str, env_extra: dict[str, str] | None = None) -> Run:
        log = self.logs / f"run-{next(self._ids)}.log"  # next() on count is atomic
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ZV_FAULT")}
        env |= {"LD_PRELOAD": str(self.shim), "ZV_FAULT_LOG": str(log), "LC_ALL": "C.UTF-8"}
        env |= env_extra or {}
        if fault is not None:
            env["ZV_FAULT"] = fault
        try:
            done = subprocess.run(
                [self.zverify, *args],
                env=env,
                cwd="/",
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"ZV_FAULT={fault}: `zverify {' '.join(args)}` hung ({RUN_TIMEOUT} s)")
        fired, sites, counts = read_log(log)
        return Run(fault, done.returncode, done.stdout, done.stderr, fired, sites, counts)

    def run_many(self, faults: Iterable[str], *args: str) -> list[Run]:
        """Independent runs side by side: each is a separate process with its own log."""
        workers = max(2, min(8, os.cpu_count() or 1))
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(lambda fault: self.run(fault, *args), faults))


def read_log(log: Path) -> tuple[list[str], list[str], dict[str, int]]:
    fired: list[str] = []
    sites: list[str] = []
    counts: dict[str, int] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        what, kind, n, *site = line.split()
        if what == "fired":
            fired.append(f"{kind} {n}")
            sites.extend(site)
        else:
            counts[kind] = int(n)
    return fired, sites, counts


def not_a_verdict(run: Run) -> bool:
    """The contract for a run in which the fault fired: exit 2, no verdict, no traceback."""
    return run.returncode == 2 and verdict(run.stdout) is None and "Traceback" not in run.stderr


def sweep(total: int) -> list[int]:
    """Every N up to 80, then a stride (the sites of a small tree are all passed early), and
    two past the last call, where the fault must not fire and the run must be clean."""
    return [*range(1, min(total, 80) + 1), *range(81, total + 1, 5), total + 1, total + 2]


PRELOAD_CFLAGS = ["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror"]


def build_preload_shim(source: Path, out: Path) -> Path:
    """source built as an LD_PRELOAD library at out; a skip naming why without gcc, a
    failure with the compiler's words if it does not build cleanly."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip(f"gcc not found: cannot build the LD_PRELOAD shim {source.name}")
    built = subprocess.run(
        [gcc, *PRELOAD_CFLAGS, "-o", str(out), str(source), "-ldl"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, f"{source.name} does not build cleanly:\n{built.stderr}"
    return out
