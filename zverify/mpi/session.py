"""The MPI job of `mpirun -n N zverify compare --mpi`: who is who, what is said, how it ends.

Rank 0 decides everything a single-node run decides (options, roots, the plan), hands key
ranges to the other ranks, and alone prints; ranks 1..N-1 walk the ranges they are given.
With one rank there is nobody to hand work to: rank 0 runs the single-node compare.

How a job ends is this module's, and never depends on how Open MPI is configured to treat
a non-zero exit.  Rank 0 releases every other rank (each confirms, then waits for rank 0's
last word) before it prints a verdict.  A verdict of 0 ends the job normally; any other
code, under a launcher, ends it through MPI_Abort(code) once stdout is flushed: mpirun
returns the code MPI_Abort was given even with orte_abort_on_non_zero_status off, when a
plain exit 1 would become 0.  An error or a signal on any rank before it is released also
ends the whole job through MPI_Abort, so no rank is left waiting for one that is gone: with
rank 0's code when rank 0 failed, with 2 when another rank did.  A signal that arrives
before MPI is started is held until it is (hold_signals), so that the rank can still abort
the job instead of exiting into MPI_Finalize's wait for the others.  A rank killed outright
(SIGKILL, the OOM killer) cannot say anything: the launcher must end the job (Open MPI's
mpirun: exit 128 + the signal).  Open MPI does that only with orte_abort_on_non_zero_status
on, so a job where Open MPI reports it off is refused: a dead rank would leave the others
waiting forever.
"""

import contextlib
import ctypes
import os
import signal
import sys
import time
from dataclasses import dataclass
from types import FrameType
from typing import Any

from zverify import exitcodes
from zverify.errors import UsageError

TAG_JOB, TAG_REQUEST, TAG_RANGE, TAG_RESULT, TAG_END = 1, 2, 3, 4, 5
RELEASED = "released"  # a rank's last word: it has nothing more to do (on TAG_REQUEST)
ROOTS = "roots"  # a rank's first word: the roots it sees (on TAG_REQUEST)
POLL_SECONDS = (0.0005, 0.02)  # first and longest wait between polls for a message

ABORT_ON_NON_ZERO = "orte_abort_on_non_zero_status"
# Open MPI's spellings of false for a bool parameter (ompi_info: "0: f|false|disabled|no|n");
# it matches them case-sensitively and takes anything else for its default, true.  Only
# the fallback below reads them: Open MPI itself is asked first.
FALSE = ("0", "f", "false", "disabled", "no", "n")
SOURCES = "by mpirun --mca or --tune, an OMPI_MCA_ variable or an MCA parameter file"
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")
HELD_SIGNALS = (signal.SIGTERM, signal.SIGINT)


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
_held: list[int] = []  # signals that came before the session was active
_handlers: dict[int, Any] = {}  # the handlers hold_signals replaced


def hold_signals() -> None:
    """Called by the CLI first thing for --mpi: SIGTERM and SIGINT wait until MPI is started.
    A rank that ended before that would leave the job in one of two waits: the others in
    MPI_Init or for its first message, or itself in MPI_Finalize; held, the signal is raised
    again in start(), where ending means MPI_Abort."""
    for signum in HELD_SIGNALS:
        _handlers[signum] = signal.signal(signum, _hold)


def _hold(signum: int, frame: FrameType | None) -> None:
    _held.append(signum)


def resume_signals() -> None:
    """The handlers hold_signals replaced are back, and a held signal reaches them now
    (start(), and the CLI when --mpi turns out not to have been asked)."""
    for signum, handler in _handlers.items():
        signal.signal(signum, handler)
    _handlers.clear()
    if _held:
        signal.raise_signal(_held[0])


def start() -> Session:
    """Join the MPI job (a singleton when not launched by mpirun/srun)."""
    global _active
    try:
        from mpi4py import MPI
    except (ImportError, OSError) as err:
        resume_signals()
        raise UsageError(
            f"--mpi needs mpi4py and an MPI library ({err}): pip install 'zverify[mpi]' "
            "and install Open MPI or MPICH (Debian: openmpi-bin)"
        ) from None
    comm = MPI.COMM_WORLD
    size = comm.Get_size()
    _active = Session(comm, comm.Get_rank(), size, released=size == 1)
    resume_signals()  # from here, a signal ends the job through end()
    if _active.rank == 0 and (where := _abort_on_non_zero_off(MPI.__file__)):
        # rank 0 says it, then ends the job; the others wait for their job meanwhile
        raise UsageError(
            f"Open MPI's {ABORT_ON_NON_ZERO} is off ({where}): a rank that dies would leave "
            "the others waiting forever; unset it"
        )
    return _active


def _abort_on_non_zero_off(library: str) -> str | None:
    """Where Open MPI is told not to end a job whose rank exits non-zero, if anywhere: then
    mpirun never notices a dead rank.  Open MPI is asked (MPI_T), which knows every way it
    can be set (mpirun --mca or --tune, OMPI_MCA_ variables, parameter files); only an MPI
    without that variable or without MPI_T falls back to the environment."""
    value = control_variable(library, ABORT_ON_NON_ZERO)
    if value is not None:
        return SOURCES if value == 0 else None
    if os.environ.get(f"OMPI_MCA_{ABORT_ON_NON_ZERO}", "").strip() in FALSE:
        return f"OMPI_MCA_{ABORT_ON_NON_ZERO} in the environment or mpirun --mca"
    return None


def control_variable(library: str, name: str) -> int | None:
    """The value of the MPI library's integer or bool control variable name, as this process
    sees it through the MPI tool interface (MPI_T), or None when it cannot be read.
    library is a module linked against the MPI library (mpi4py.MPI): its symbols resolve
    through it."""
    try:
        lib = ctypes.CDLL(library)
        names = ("init_thread", "finalize", "cvar_get_index", "cvar_handle_alloc")
        init, fini, index_of, alloc = (getattr(lib, f"MPI_T_{n}") for n in names)
        read, free = lib.MPI_T_cvar_read, lib.MPI_T_cvar_handle_free
    except (OSError, AttributeError):
        return None
    provided, index, count = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    handle = ctypes.c_void_p()
    value = (ctypes.c_int64 * 2)()  # zeroed and wider than an int or a bool
    if init(0, ctypes.byref(provided)) != 0:
        return None
    try:
        if index_of(name.encode(), ctypes.byref(index)) != 0:
            return None
        if alloc(index, None, ctypes.byref(handle), ctypes.byref(count)) != 0:
            return None
        try:
            if count.value != 1 or read(handle, value) != 0:
                return None
        finally:
            free(ctypes.byref(handle))
    finally:
        fini()
    return value[0]


def end(code: int) -> int:
    """Called last by the CLI: returns code when the job may end normally (a verdict of 0
    on rank 0 once every other rank is released; a released rank; a singleton), else ends
    the whole job through MPI_Abort: with rank 0's code, or with 2 from another rank."""
    session = _active
    if session is None:  # MPI never started (a usage error): nothing to end but this rank
        _handlers.clear()
        if _held:  # signalled meanwhile: that is how this run ended
            return exitcodes.TERMINATED if _held[0] == signal.SIGTERM else exitcodes.INTERRUPTED
        return code
    if session.released and session.rank != 0:
        return code  # rank 0 ends the job
    for signum in HELD_SIGNALS:  # decided: a signal now must not leave the job half-ended
        signal.signal(signum, signal.SIG_IGN)
    if session.released and (code == 0 or not launched()):
        for rank in range(1, session.size):
            session.comm.send(None, dest=rank, tag=TAG_END)
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


def await_end(session: Session) -> None:
    """A released rank waits for rank 0's last word (then all ranks finalize together) or
    to be ended by its MPI_Abort.  Not in MPI_Finalize: Open MPI 4.1.4 aborting a job whose
    other ranks were already finalizing hung or crashed mpirun (measured: 2 runs in 12)."""
    session.receive(0, TAG_END)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def launched() -> bool:
    """Started by a launcher (mpirun, srun), which turns the ranks' ends into its exit code."""
    return any(name in os.environ for name in RANK_VARIABLES)


def quiet_rank() -> bool:
    """A rank other than 0 of an MPI launch, told by the launcher's environment before MPI
    is started: it leaves command-line usage errors to rank 0, which prints them once."""
    for name in RANK_VARIABLES:
        value = os.environ.get(name)
        if value is not None:
            return value != "0"
    return False
