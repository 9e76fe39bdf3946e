"""An MPI job that cannot finish never prints a verdict: a rank stopped by a signal, an
Open MPI set not to notice, usage errors (said once, by rank 0), a missing mpi4py."""

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.cli.console import console_script
from tests.mpi.helpers import RUN_TIMEOUT, environment, rank_pid, under_mpi

pytestmark = pytest.mark.mpi  # mpirun and mpi4py (tests/mpi/conftest.py)

VERDICT_WORDS = ("IDENTICAL", "DIFFERENT", '"identical"')


def killed_mid_run(
    tree: tuple[Path, Path], rank: int, sig: int
) -> subprocess.CompletedProcess[str]:
    """Run the 200k-entry compare on 2 ranks and send sig to one of them a second after it
    started (the job takes several seconds: checked, so the kill is not after the end)."""
    mark = uuid.uuid4().hex
    argv = ["mpirun", "-n", "2", "--oversubscribe", console_script(), "compare", "--mpi"]
    job = subprocess.Popen(
        [*argv, *map(str, tree)],
        env=environment({"ZVERIFY_TEST_MARK": mark}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        pid = rank_pid(mark, rank, time.monotonic() + 30)
        assert pid is not None, f"no rank {rank} appeared"
        time.sleep(1.0)
        assert job.poll() is None, "the job ended before the kill: make the tree bigger"
        os.kill(pid, sig)
        out, err = job.communicate(timeout=RUN_TIMEOUT)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    return subprocess.CompletedProcess(job.args, job.returncode, out, err)


def no_verdict(stdout: str) -> bool:
    return not any(word in stdout for word in VERDICT_WORDS)


def test_a_worker_stopped_by_sigterm_ends_the_job_with_2(big_tree: tuple[Path, Path]) -> None:
    done = killed_mid_run(big_tree, 1, signal.SIGTERM)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "MPI rank 1 could not finish its share" in done.stderr
    assert no_verdict(done.stdout), done.stdout[-500:]


def test_a_worker_killed_outright_gives_no_verdict(big_tree: tuple[Path, Path]) -> None:
    """SIGKILL leaves the rank no word: mpirun ends the job and exits 128 + 9 itself."""
    done = killed_mid_run(big_tree, 1, signal.SIGKILL)
    assert done.returncode not in (0, 1), done.stderr[-2000:]
    assert no_verdict(done.stdout), done.stdout[-500:]
    assert "signal 9" in done.stderr


def test_rank_0_stopped_by_sigterm(big_tree: tuple[Path, Path]) -> None:
    done = killed_mid_run(big_tree, 0, signal.SIGTERM)
    assert done.returncode == 143, done.stderr[-2000:]
    assert "zverify: terminated" in done.stderr and no_verdict(done.stdout)


def test_open_mpi_that_would_not_notice_a_dead_rank_is_refused(rich_tree: Path) -> None:
    """With orte_abort_on_non_zero_status off, mpirun returns 0 even when rank 0 exits 1."""
    env = {"OMPI_MCA_orte_abort_on_non_zero_status": "0"}
    done = under_mpi(2, str(rich_tree), str(rich_tree) + "/docs", env=env)
    assert done.returncode == 2 and "orte_abort_on_non_zero_status is off" in done.stderr
    assert no_verdict(done.stdout)


def test_usage_errors_are_said_once(rich_tree: Path, tmp_path: Path) -> None:
    manifest = tmp_path / "src.zvm"
    subprocess.run(
        [console_script(), "manifest", "-q", str(rich_tree), "-o", str(manifest)], check=True
    )
    done = under_mpi(3, str(manifest), str(rich_tree))
    assert done.returncode == 2 and done.stderr.count("is a manifest") == 1, done.stderr
    done = under_mpi(3, "--no-such-option", str(rich_tree), str(rich_tree))
    assert done.returncode == 2 and done.stderr.count("No such option") == 1, done.stderr


def test_a_slow_rank_0_still_says_the_usage_error(rich_tree: Path) -> None:
    """Rank 0 starts two seconds after the others (an MPMD launch with a sleep in front of
    it): the quiet ranks must not end the job before rank 0 has printed its line."""
    line = [console_script(), "compare", "--mpi", "--no-such-option", str(rich_tree), "."]
    slow = ["sh", "-c", 'sleep 2; exec "$@"', "sh", *line]
    argv = ["mpirun", "--oversubscribe", "-n", "1", *slow, ":", "-n", "2", *line]
    done = subprocess.run(
        argv, env=environment(), capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False
    )
    assert done.returncode == 2 and done.stderr.count("No such option") == 1, done.stderr


def test_without_mpi4py_mpi_is_a_usage_error(tmp_path: Path, rich_tree: Path) -> None:
    fake = tmp_path / "mpi4py"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('mpi4py hidden by the test')\n")
    env = environment({"PYTHONPATH": str(tmp_path)})
    done = subprocess.run(
        [console_script(), "compare", "--mpi", str(rich_tree), str(rich_tree) + "/docs"],
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == 2 and no_verdict(done.stdout)
    assert "--mpi needs mpi4py" in done.stderr and "zverify[mpi]" in done.stderr


@pytest.mark.parametrize("ranks", [1, 3])
def test_singleton_and_small_jobs_release_cleanly(
    rich_tree: Path, rich_copy: Path, ranks: int
) -> None:
    """A verdict of 0 ends the job normally: no rank aborted, nothing on stderr."""
    done = under_mpi(ranks, str(rich_tree), str(rich_copy))
    assert done.returncode == 0 and "IDENTICAL" in done.stdout
    assert done.stderr == "", done.stderr
