"""Signals at random points of MPI jobs: never a verdict's exit code without the verdict, and
never a hang.

SIGTERM, SIGINT and SIGKILL go to rank 0, to another rank or to mpirun itself, at a point
drawn (seeded) from the start-up, the walk or the end of jobs of 1 to 4 ranks.  The trees
differ, so the one true verdict is 1 (DIFFERENT) and an exit 0 is always false.  For each run:
- it ends within HANG seconds, and no process of it is left behind;
- an exit 1 comes with the complete JSON document that says DIFFERENT, except where mpirun
  itself was sent SIGTERM or SIGINT: Open MPI's mpirun then exits 1 on its own, whatever its
  ranks did (adversarial-3 M3; README, "Exit codes"), and a script must read the document.
"""

import contextlib
import json
import os
import random
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass

import pytest

from tests.cli.console import console_script
from tests.mpi.helpers import cli_running, environment, mpi_loaded, processes

pytestmark = pytest.mark.mpi  # mpirun and mpi4py (tests/mpi/conftest.py)

HANG = 60  # seconds for one job, which takes 2-3 here
LEFT_BEHIND = 10  # seconds the processes of an ended job may take to go
SEED = 28
TARGETS = ("rank 0", "other rank", "mpirun")
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGKILL)
# Where a signal lands: in the start-up, up to 0.15 s after MPI is loaded into the target
# (rank 0 for mpirun), while MPI_Init runs and the session starts; then parts of a clean run
# (the walk, the end).
START_UP = (0.0, 0.15)
POINTS = (START_UP, (0.35, 0.7), (0.7, 1.0))


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """20,000 files of 2 KiB in 40 directories, and a copy with one file changed."""
    root = tmp_path_factory.mktemp("kill")
    rng = random.Random(SEED)
    for d in range(40):
        folder = root / "a" / f"d{d:02d}"
        folder.mkdir(parents=True)
        for i in range(500):
            (folder / f"f{i:04d}").write_bytes(rng.randbytes(2048))
    subprocess.run(["cp", "-a", str(root / "a"), str(root / "b")], check=True)
    (root / "b" / "d20" / "f0100").write_bytes(b"changed\n")
    return str(root / "a"), str(root / "b")


@dataclass
class Run:
    ranks: int
    target: str
    sig: signal.Signals
    delay: float
    start_up: bool  # delay counts from MPI loaded into the target (or rank 0), not the launch
    sent: bool = False
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""

    def __str__(self) -> str:
        sent = "sent" if self.sent else "not sent (job over)"
        since = "MPI loaded" if self.start_up else "launch"
        when = f"{self.delay:.2f} s after {since}"
        return f"-n {self.ranks}, {self.sig.name} to {self.target}, {when} ({sent})"


def launch(ranks: int, trees: tuple[str, str], mark: str) -> subprocess.Popen[str]:
    argv = ["mpirun", "--oversubscribe", "-n", str(ranks), console_script(), "compare", "--mpi"]
    return subprocess.Popen(
        [*argv, "--json", *trees],
        env=environment({"ZVERIFY_TEST_MARK": mark}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def signal_at(run: Run, job: subprocess.Popen[str], mark: str, start: float | None) -> None:
    """Send run.sig to its target run.delay seconds after start (None: after MPI is loaded
    into the target, or rank 0), or as soon as the target rank exists, if later, unless the
    job ended first."""
    rank = {"rank 0": 0, "other rank": run.ranks - 1, "mpirun": None}[run.target]
    while job.poll() is None:
        found = processes(mark)
        pid = job.pid if rank is None else _pid_of(found, rank)
        if rank is not None and run.sig == signal.SIGINT and pid is not None:
            pid = pid if cli_running(pid) else None  # helpers.cli_running says why
        if run.start_up and start is None:
            watched = _pid_of(found, rank or 0)
            start = time.monotonic() if watched and mpi_loaded(watched) else None
        if pid is not None and start is not None and time.monotonic() >= start + run.delay:
            try:
                os.kill(pid, run.sig)
                run.sent = True
            except ProcessLookupError:
                pass
            return
        time.sleep(0.005)


def _pid_of(found: dict[int, int | None], rank: int) -> int | None:
    return next((pid for pid, r in found.items() if r == rank), None)


def play(run: Run, trees: tuple[str, str]) -> list[str]:
    """Run the job with its signal; what went wrong, if anything."""
    mark = uuid.uuid4().hex
    job = launch(run.ranks, trees, mark)
    try:
        signal_at(run, job, mark, None if run.start_up else time.monotonic())
        run.stdout, run.stderr = job.communicate(timeout=HANG)
        run.returncode = job.returncode
    except subprocess.TimeoutExpired:
        return [f"{run}: still running {HANG} s later"]
    finally:
        left = _left_behind(mark)
        if job.poll() is None:
            job.kill()
            job.wait()
    problems = [f"{run}: processes left behind {left}"] if left else []
    return problems + judge(run)


def _left_behind(mark: str) -> dict[int, int | None]:
    """The processes of the job still there LEFT_BEHIND seconds after it ended (killed)."""
    deadline = time.monotonic() + LEFT_BEHIND
    while (found := processes(mark)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return found


def judge(run: Run) -> list[str]:
    code = run.returncode
    if code == 0:
        return [f"{run}: exit 0 for trees that differ"]
    if code != 1 or complete_and_different(run.stdout):
        return []
    if run.target == "mpirun" and run.sig != signal.SIGKILL and run.sent:
        return []  # Open MPI's own exit status for a signalled mpirun (module docstring)
    tail = f"{run.stdout[-300:]!r} {run.stderr[-600:]!r}"
    return [f"{run}: exit 1 without a complete verdict: {tail}"]


def complete_and_different(stdout: str) -> bool:
    try:
        doc = json.loads(stdout)
    except ValueError:
        return False
    return bool(doc.get("complete") is True and doc.get("exit_code") == 1)


def clean_durations(trees: tuple[str, str]) -> dict[int, float]:
    """Seconds a job of each size takes, unsignalled: the scale of the signal points."""
    took = {}
    for ranks in (1, 2, 3, 4):
        start = time.monotonic()
        done = launch(ranks, trees, uuid.uuid4().hex)
        out, err = done.communicate(timeout=HANG)
        took[ranks] = time.monotonic() - start
        assert done.returncode == 1 and complete_and_different(out), (ranks, err[-1500:])
    return took


def runs(took: dict[int, float]) -> list[Run]:
    """Every target and signal at each point of the job, with a drawn job size and moment."""
    rng = random.Random(SEED)
    chosen = []
    for lo, hi in POINTS:
        for target in TARGETS:
            for sig in SIGNALS:
                ranks = rng.choice((2, 3, 4) if target == "other rank" else (1, 2, 3, 4))
                start_up = (lo, hi) == START_UP
                delay = rng.uniform(lo, hi) * (1.0 if start_up else took[ranks])
                chosen.append(Run(ranks, target, sig, delay, start_up))
    return chosen


def test_signals_anywhere_never_fake_a_verdict_nor_hang(trees: tuple[str, str]) -> None:
    took = clean_durations(trees)
    problems = []
    played = runs(took)
    for run in played:
        problems += play(run, trees)
        print(f"{run}: exit {run.returncode}")  # the record, shown with pytest -s
    assert not problems, "\n".join(problems)
    assert sum(run.sent for run in played) >= len(played) // 2, [str(r) for r in played]
