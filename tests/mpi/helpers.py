"""Run the installed `zverify` under `mpirun`, next to a single-node run to hold it to.

Open MPI refuses to run as root unless told it may (OMPI_ALLOW_RUN_AS_ROOT*, the recipe in
docs/guide/mpi.md); --oversubscribe lets 4 ranks share this machine's cores.
"""

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.console import console_script
from tests.cli.producer import timeless

RUN_TIMEOUT = 300  # seconds: a hung rank must fail the test, not the CI job
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def missing_mpi() -> str | None:
    """Why MPI tests cannot run here (None: they can).  CI installs both (scripts/setup.sh)."""
    if shutil.which("mpirun") is None:
        return "no mpirun (Debian: apt install openmpi-bin libopenmpi-dev)"
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "no mpi4py (pip install -e '.[mpi]')"
    return None


def require_mpi() -> None:
    """Skip with the reason, except in CI, where a missing MPI is a broken setup."""
    why = missing_mpi()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI without MPI: {why}")
        pytest.skip(why)


@dataclass(frozen=True)
class Done:
    returncode: int
    stdout: str
    stderr: str


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return env | MPI_ENV | {"LC_ALL": "C.UTF-8", "COLUMNS": "100"} | (extra or {})


def single(*args: str) -> Done:
    """`zverify compare ARGS` on one node."""
    return _run([console_script(), "compare", *args])


def under_mpi(ranks: int, *args: str, env: dict[str, str] | None = None) -> Done:
    """`mpirun -n RANKS zverify compare --mpi ARGS`."""
    argv = ["mpirun", "-n", str(ranks), "--oversubscribe", console_script(), "compare", "--mpi"]
    return _run([*argv, *args], env)


def _run(argv: list[str], env: dict[str, str] | None = None) -> Done:
    done = subprocess.run(
        argv,
        env=environment(env),
        cwd="/",
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    return Done(done.returncode, done.stdout, done.stderr)


def assert_same(one: Done, many: Done, ranks: int) -> None:
    """Byte-identical stdout, but for the times of a JSON document's producer (two runs
    never start at the same millisecond), and the same exit code (mpirun adds its own
    banner to stderr when the exit code is not 0, so stderr is not compared)."""
    assert many.returncode == one.returncode, (ranks, many.returncode, many.stderr[-2000:])
    assert timeless(many.stdout) == timeless(one.stdout), (ranks, many.stderr[-2000:])


def cli_running(pid: int) -> bool:
    """zverify's own code runs in process pid: it catches SIGTERM (cli.run's first act).
    Before that, a SIGINT can land in the interpreter's own start-up, which Python ends with
    "Fatal Python error: init_import_site" and exit 1, for every zverify command alike;
    the signal tests wait for this, as zverify cannot act before it runs."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught, 16) >> (signal.SIGTERM - 1) & 1)


def mpi_loaded(pid: int) -> bool:
    """The MPI library is mapped into pid: mpi4py is being imported, MPI_Init runs or ran."""
    try:
        return "libmpi" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def processes(mark: str) -> dict[int, int | None]:
    """pid -> MPI rank (None: mpirun) of every process of the job whose environment holds
    ZVERIFY_TEST_MARK=mark."""
    found: dict[int, int | None] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"ZVERIFY_TEST_MARK={mark}".encode() in env:
            ranks = [e for e in env if e.startswith(b"OMPI_COMM_WORLD_RANK=")]
            found[int(pid)] = int(ranks[0].split(b"=")[1]) if ranks else None
    return found


def rank_pid(mark: str, rank: int, deadline: float) -> int | None:
    """The pid of rank's zverify in the job marked mark, once it appears (None: not by the
    deadline, time.monotonic())."""
    while time.monotonic() < deadline:
        pids = [pid for pid, r in processes(mark).items() if r == rank]
        if pids:
            return pids[0]
        time.sleep(0.005)
    return None
