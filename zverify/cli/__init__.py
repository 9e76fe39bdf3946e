"""The `zverify` command: the root typer app and the one top-level handler of exit codes.

Commands live one per module (cli/compare.py, ...); each parses options, calls one library
function and renders its result.  Only the module of the command that runs is imported
(cli/lazy.py).  Here, and only here, everything that ends a run becomes
an exit code: ZverifyError -> one line and its code; a usage error -> one line, 2; Ctrl-C ->
130, SIGTERM -> 143 (both after the same clean-up); a reader of stdout that went away -> 141
without a word, as `| head` expects; any unexpected exception -> its traceback on stderr and
2, never 1 ("differences").
"""

import errno
import importlib
import io
import os
import signal
import sys
import traceback
from collections.abc import Mapping
from typing import ClassVar

import typer

from zverify import corefailure, exitcodes, provenance
from zverify.cli.lazy import LazyCommand, LazyGroup, end_startup
from zverify.errors import ZverifyError


class Commands(LazyGroup):
    lazy_commands: ClassVar[Mapping[str, LazyCommand]] = {
        "compare": LazyCommand(
            "zverify.cli.compare",
            "compare",
            "Compare SRC and DST: exit 0 identical, 1 different, 2 could not verify everything.",
        ),
        "cutover": LazyCommand(
            "zverify.cli.cutover",
            "cutover",
            "Check a replica before the cutover: exit 0 READY, 1 NOT READY (every reason "
            "listed), 2 could not check.  Read-only.",
        ),
        "manifest": LazyCommand(
            "zverify.cli.manifest",
            "manifest",
            "Record TREE in a manifest, to compare it later or elsewhere with `zverify compare`.",
        ),
        "stream": LazyCommand(
            "zverify.cli.stream",
            "app",
            "Validate ZFS send-stream files offline (no ZFS needed).",
        ),
        "cold": LazyCommand(
            "zverify.cli.cold",
            "app",
            "Send-stream archives on cold storage: send, check, scrub, restore, drill, prune, "
            "clean, parity, repair, lock, consolidate, digest.",
        ),
        "certificate": LazyCommand(
            "zverify.cli.certificate",
            "app",
            "Re-check a certificate of a cutover check or a restore drill.",
        ),
        "schema": LazyCommand(
            "zverify.cli.schema",
            "schema",
            "Print the JSON Schema of the --json documents NAME (compare, cold-check...); "
            "without NAME, list the names.",
        ),
    }


COMPLETION_FLAGS = ("--install-completion", "--show-completion")


def _make_app(completion: bool) -> typer.Typer:
    """The root app; with completion, typer's --install-completion and --show-completion
    (bash, zsh, fish), whose import costs every run ~3 ms: only built when asked for."""
    made = typer.Typer(
        cls=Commands,
        name="zverify",
        help="Prove a copy is complete and exact, and explain what differs.  Shell "
        "completion for bash, zsh and fish is installed with the package (man zverify); "
        "where it is not found: zverify --install-completion.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        pretty_exceptions_show_locals=False,
        add_completion=completion,
        rich_markup_mode=None,  # plain help: rich costs ~50 ms of start-up on every --help
        # -h as b3sum, rclone and zfs take it; every subcommand's context inherits the names
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    made.callback()(_root)
    return made


def _completion_asked(argv: list[str] | None) -> bool:
    args = sys.argv[1:] if argv is None else argv
    return "_ZVERIFY_COMPLETE" in os.environ or any(a in COMPLETION_FLAGS for a in args)


def _mpi_asked(argv: list[str] | None) -> bool:
    """Might this be `compare --mpi` (known for sure only once parsed)?  Only compare has
    --mpi and gives held signals back when it was not asked; any other command must never
    hold them, whatever its arguments say ('--mpi' can be a pattern or a path)."""
    args = sys.argv[1:] if argv is None else argv
    command = next((a for a in args if not a.startswith("-")), None)
    return command == "compare" and "--mpi" in args


def _show_version(value: bool) -> None:
    if value:
        from zverify.version import describe

        print("\n".join(describe()))
        raise typer.Exit(exitcodes.IDENTICAL)


def _root(
    version: bool = typer.Option(
        False,
        "--version",
        "-V",
        callback=_show_version,
        is_eager=True,
        help="Print the version, the hashing kernels in use and the ZFS reachable here.",
    ),
) -> None:
    """zverify: copy verification for people who move data for a living."""


app = _make_app(completion=False)


def _exception_classes(name: str) -> tuple[type[BaseException], ...]:
    """typer up to 0.2x raises click's exceptions, newer typer its vendored copy and its own
    Exit/Abort: accept all of them, so that a usage error can never fall through to the crash
    handler (or, worse, to exit 1)."""
    found: list[type[BaseException]] = []
    modules = ["typer", "typer.exceptions", "typer._click.exceptions"]
    if "click" in sys.modules:  # loaded by the typer versions that use it; else ~4 ms for nothing
        modules.append("click.exceptions")
    for module in modules:
        try:
            cls = getattr(importlib.import_module(module), name, None)
        except ImportError:
            continue
        if isinstance(cls, type) and issubclass(cls, BaseException) and cls not in found:
            found.append(cls)
    return tuple(found)


_USAGE = _exception_classes("ClickException")
_EXIT = _exception_classes("Exit")
_ABORT = _exception_classes("Abort")


def main(argv: list[str] | None = None) -> None:
    _buffered_stdout()
    code = run(argv)
    _flush_stdout()
    end_startup()  # if no command ran: the collection at exit then skips start-up's objects
    sys.exit(_end_mpi_job(code))


def _end_mpi_job(code: int) -> int:
    """An MPI job (compare --mpi) ends as zverify.mpi.session decides; only when one was
    started is that module loaded."""
    session = sys.modules.get("zverify.mpi.session")
    return session.end(code) if session is not None else code


def run(argv: list[str] | None = None) -> int:
    """Run the command line and return its exit code; never raises (but SystemExit)."""
    try:  # a signal from the first moment on takes the clean-up path below
        signal.signal(signal.SIGTERM, _terminate)
        provenance.start()  # every JSON document's "started"
        if "ZVERIFY_XXH" in os.environ:  # only then is the C core loaded this early
            from zverify.hashing import check_xxh_setting

            check_xxh_setting()
        if _mpi_asked(argv):
            _hold_mpi_signals()
        chosen = _make_app(completion=True) if _completion_asked(argv) else app
        code = chosen(args=argv, prog_name="zverify", standalone_mode=False)
    except ZverifyError as err:
        return _fail(str(err), err.exit_code)
    except SystemExit as err:
        # click exits by itself on EPIPE (with 1, "differences"!) and may swap stderr for
        # a wrapper that swallows writes; zverify's commands never call sys.exit.
        return _framework_exit(err)
    except KeyboardInterrupt:
        return _interrupted()
    except _ABORT:
        return _interrupted()
    except _EXIT as err:
        code = getattr(err, "exit_code", exitcodes.TROUBLE)
        # typer turns Ctrl-C into Exit(130) itself: still say so
        return _interrupted() if code == exitcodes.INTERRUPTED else code
    except _USAGE as err:
        return _usage_error(err)
    except MemoryError:
        return _fail("out of memory; nothing was verified", exitcodes.TROUBLE)
    except OSError as err:
        # e.g. ENOSPC or EPIPE while writing the report: the verdict was not delivered
        _discard_stdout()
        if err.errno == errno.EPIPE:
            return exitcodes.BROKEN_PIPE
        return _fail(f"{err.strerror or err}{_filename(err)}", exitcodes.TROUBLE)
    except Exception as err:
        if (broken := corefailure.describe(err)) is not None:
            return _fail(broken, exitcodes.TROUBLE)  # an install problem: no traceback
        traceback.print_exc(file=sys.stderr)
        return _fail("internal error (traceback above); nothing was verified", exitcodes.TROUBLE)
    if code == exitcodes.INTERRUPTED:
        return _interrupted()  # typer returns Ctrl-C as 130 without a word
    return code if isinstance(code, int) else exitcodes.IDENTICAL


def _framework_exit(err: SystemExit) -> int:
    """click exits by itself only on EPIPE: the reader of stdout went away (`| head`)."""
    if err.code in (None, 0):
        return exitcodes.IDENTICAL
    sys.stderr = sys.__stderr__
    _discard_stdout()
    return exitcodes.BROKEN_PIPE


def _usage_error(err: BaseException) -> int:
    if "--mpi" in sys.argv and _other_mpi_rank():
        # Every rank parsed the same line, so rank 0 fails the same way: it says it once and
        # its 2 is the job's status. A non-zero exit here would let mpirun abort the job
        # before rank 0 had printed its line (seen on a loaded 2-core machine).
        return _LEFT_TO_RANK_0
    text = err.format_message()  # type: ignore[attr-defined]
    if type(err).__name__ == "NoArgsIsHelpError":
        if text.strip():  # older click puts the help here; newer typer printed it already
            print(text, file=sys.stderr)
        return exitcodes.TROUBLE
    return _fail(f"{_missing_after_variadic(err) or text} (see --help)", exitcodes.TROUBLE)


def _missing_after_variadic(err: BaseException) -> str | None:
    """click fills the arguments after a variadic one first: `cold restore A` gives A to
    TARGET and says DIR... is missing, while the one left out is TARGET.  Name that one."""
    param, ctx = getattr(err, "param", None), getattr(err, "ctx", None)
    if type(err).__name__ != "MissingParameter" or param is None or ctx is None:
        return None
    arguments = [p for p in ctx.command.params if p.param_type_name == "argument"]
    if param.nargs != -1 or param not in arguments:
        return None
    after = arguments[arguments.index(param) + 1 :]
    if not after:
        return None
    return f"Missing argument '{after[-1].human_readable_name}'."


_LEFT_TO_RANK_0 = 0  # not a verdict: the launcher reports the first non-zero rank's status


def _hold_mpi_signals() -> None:
    """A rank must not end before it has joined the MPI job (zverify.mpi.session)."""
    from zverify.mpi.session import hold_signals

    hold_signals()


def _other_mpi_rank() -> bool:
    from zverify.mpi.session import quiet_rank

    return quiet_rank()


def _fail(message: str, code: int) -> int:
    print(f"zverify: {message}", file=sys.stderr)
    return code


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be so that it takes the same clean-up path (a
    .partial removed, a JSON document closed as incomplete); click may re-raise it as
    Abort, so the handler also leaves a mark."""


_terminated = False


def _terminate(signum: int, frame: object) -> None:
    global _terminated
    _terminated = True
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM kills at once
    raise _Terminated


def _interrupted() -> int:
    if _terminated:
        return _fail("terminated", exitcodes.TERMINATED)
    return _fail("interrupted", exitcodes.INTERRUPTED)


def _filename(err: OSError) -> str:
    return f": {err.filename}" if err.filename else ""


def _buffered_stdout() -> None:
    """Unbuffered stdout (PYTHONUNBUFFERED, python -u) writes a text through one raw write,
    which a signal or a reader that left can end short without an error: the rest of the
    report lost, and the exit code a verdict.  A buffered writer writes all or raises."""
    raw = getattr(sys.stdout, "buffer", None)
    if isinstance(raw, io.FileIO):
        sys.stdout = io.TextIOWrapper(
            io.BufferedWriter(raw),
            encoding=sys.stdout.encoding,
            errors=sys.stdout.errors,
            line_buffering=bool(sys.stdout.line_buffering),
        )


def _flush_stdout() -> None:
    """Flush now, so that a full disk or a closed pipe is an exit code, not a message that
    Python prints at shutdown after the exit code was already decided."""
    try:
        sys.stdout.flush()
    except OSError as err:
        _discard_stdout()
        if err.errno == errno.EPIPE:  # the reader went away (| head): quietly, as in run()
            sys.exit(exitcodes.BROKEN_PIPE)
        _fail(f"cannot write the report: {err.strerror or err}", exitcodes.TROUBLE)
        sys.exit(exitcodes.TROUBLE)


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that the flush at interpreter exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
