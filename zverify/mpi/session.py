"""The MPI job of `mpirun -n N zverify compare --mpi`: who is who, what is said, how it ends.

Rank 0 decides everything a single-node run decides (options, roots, the plan), hands key
ranges to the other ranks, and alone prints; ranks 1..N-1 walk the ranges they are given.
With one rank there is nobody to hand work to: rank 0 runs the single-node compare.

How a job ends is this module's.  Rank 0 releases every other rank (each confirms) before it
prints a verdict, and the job then ends normally with the verdict's exit code.  An error or
a signal on any rank before that ends the whole job through MPI_Abort, so no rank is left
waiting for one that is gone: with rank 0's exit code when rank 0 failed, with 2 when
another rank did.  Open MPI set not to abort on a non-zero exit is refused: its mpirun
would then return 0 for a verdict of 1 (differences).  A rank killed
outright (SIGKILL, the OOM killer) cannot say anything: the MPI launcher ends the job and
exits non-zero itself (Open MPI's mpirun: 128 + the signal), and no verdict was printed.
"""

import contextlib
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from zverify import exitcodes
from zverify.errors import UsageError

TAG_JOB, TAG_REQUEST, TAG_RANGE, TAG_RESULT = 1, 2, 3, 4
RELEASED = "released"  # a rank's last word: it has nothing more to do (on TAG_REQUEST)
ROOTS = "roots"  # a rank's first word: the roots it sees (on TAG_REQUEST)
POLL_SECONDS = (0.0005, 0.02)  # first and longest wait between polls for a message

FALSE = ("0", "false", "no", "f", "n")
ABORT_ON_NON_ZERO = "orte_abort_on_non_zero_status"
MCA_PARAM_FILES = ("~/.openmpi/mca-params.conf", "/etc/openmpi/openmpi-mca-params.conf")
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")


@dataclass
class Session:
    comm: Any  # mpi4py.MPI.Comm
    rank: int
    size: int
    released: bool  # every other rank was told to stop: the job may end normally

    def receive(self, source: int | None = None, tag: int | None = None) -> tuple[Any, int, int]:
        """The next message (payload, source, tag) from source with tag (None: any), polled
        so that signals still arrive: a blocking MPI receive would hold off SIGTERM until a
        message came."""
        from mpi4py import MPI

        source = MPI.ANY_SOURCE if source is None else source
        tag = MPI.ANY_TAG if tag is None else tag
        status = MPI.Status()
        wait = POLL_SECONDS[0]
        while not self.comm.iprobe(source=source, tag=tag, status=status):
            time.sleep(wait)
            wait = min(wait * 2, POLL_SECONDS[1])
        payload = self.comm.recv(source=status.Get_source(), tag=status.Get_tag())
        return payload, status.Get_source(), status.Get_tag()


_active: Session | None = None


def start() -> Session:
    """Join the MPI job (a singleton when not launched by mpirun/srun)."""
    global _active
    try:
        from mpi4py import MPI
    except (ImportError, OSError) as err:
        raise UsageError(
            f"--mpi needs mpi4py and an MPI library ({err}): pip install 'zverify[mpi]' "
            "and install Open MPI or MPICH (Debian: openmpi-bin)"
        ) from None
    comm = MPI.COMM_WORLD
    size = comm.Get_size()
    _active = Session(comm, comm.Get_rank(), size, released=size == 1)
    where = _abort_on_non_zero_off()
    if _active.rank == 0 and where:  # rank 0 says it, then ends the job
        raise UsageError(
            f"Open MPI's {ABORT_ON_NON_ZERO} is off ({where}): mpirun would exit 0 whatever "
            "the verdict, and a rank that dies would leave the others waiting; unset it"
        )
    return _active


def _abort_on_non_zero_off() -> str | None:
    """Where Open MPI is told not to end a job whose rank exits non-zero, if anywhere: then
    mpirun returns 0 for an exit 1 (differences) and never notices a dead rank."""
    if os.environ.get(f"OMPI_MCA_{ABORT_ON_NON_ZERO}", "").strip().lower() in FALSE:
        return f"OMPI_MCA_{ABORT_ON_NON_ZERO} in the environment or mpirun --mca"
    for path in MCA_PARAM_FILES:
        try:
            with open(os.path.expanduser(path), encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:
            name, _, value = line.partition("=")
            if name.strip() == ABORT_ON_NON_ZERO and value.strip().lower() in FALSE:
                return path
    return None


def end(code: int) -> int:
    """Called last by the CLI: returns code when the job may end normally (a verdict on
    rank 0 once every other rank is released; a released rank), else ends the whole job
    through MPI_Abort: with rank 0's code, or with 2 from another rank."""
    session = _active
    if session is None or session.released:
        return code
    _flush()
    if session.rank != 0:
        print(
            f"zverify: MPI rank {session.rank} could not finish its share; "
            "the job ends without a verdict",
            file=sys.stderr,
            flush=True,
        )
    session.comm.Abort(code if session.rank == 0 else exitcodes.TROUBLE)
    return code  # not reached


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def quiet_rank() -> bool:
    """A rank other than 0 of an MPI launch, told by the launcher's environment before MPI
    is started: it leaves command-line usage errors to rank 0, which prints them once."""
    for name in RANK_VARIABLES:
        value = os.environ.get(name)
        if value is not None:
            return value != "0"
    return False
