"""`zverify cold send|check|restore|prune|clean|parity|repair`: send streams archived as files
(zverify.cold).

Each command holds the archive's lock for its whole run (zverify.cold.lock): send as a
writer, check and restore (and the dry runs) as readers; prune --yes, clean --yes, parity,
repair and restore --repair exclusively.  A lock another zverify holds is refused at once
(exit 2), or waited for up to --wait SECONDS.
"""

import contextlib
import os
import shlex
import stat
import sys
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

from zverify import exitcodes
from zverify.cli.epilogs import epilog
from zverify.cold.names import shown
from zverify.errors import ArchiveError, UsageError

if TYPE_CHECKING:
    from zverify.cold.check import ArchiveReport, ProgressHook
    from zverify.cold.clean import Leftover
    from zverify.cold.prune import DatasetPrune
    from zverify.cold.repair import Outcome
    from zverify.cold.restore import RestorePlan
    from zverify.cold.store import LocalStore

app = typer.Typer(
    name="cold",
    help="Send-stream archives on cold storage: send, check, restore, prune, clean, parity, "
    "repair.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    add_completion=False,
    rich_markup_mode=None,  # plain help: rich costs ~50 ms of start-up on every --help
)

Percent = Annotated[
    int | None,
    typer.Option(
        "--parity",
        metavar="PCT",
        min=0,
        max=100,
        show_default=False,
        help="PAR2 recovery data beside each stream, PCT % of its size (0: none).  Default: "
        "the archive's level (none in an archive without parity).",
    ),
]

Places = Annotated[
    list[str],
    typer.Argument(
        metavar="DIR...",
        help="The archive: one directory, or several (a chain may be spread over them).",
    ),
]

Recursive = Annotated[
    bool,
    typer.Option(
        "--recursive",
        "-r",
        help="Also the directories below each DIR (one per dataset, any depth; a symlinked "
        "directory is never followed).",
    ),
]

Wait = Annotated[
    float,
    typer.Option(
        "--wait",
        metavar="SECONDS",
        show_default=False,
        help="Wait up to SECONDS for another zverify using the archive (default: refuse "
        "at once, exit 2).",
    ),
]


@app.command("check", epilog=epilog("cold check"))
def check(
    directories: Places,
    dataset: Annotated[
        str | None, typer.Option("--dataset", help="Only this dataset (pool/set).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    recursive: Recursive = False,
    wait: Wait = 0,
) -> int:
    """Read every stream completely, rebuild the chains by GUID across every DIR: exit 0
    every file intact and every incremental reachable from a full, 1 anything else found, 2
    could not read."""
    from zverify.progress import byte_progress, wanted
    from zverify.report import cold as cold_report

    store = _store(directories, recursive)
    progress = byte_progress(wanted(quiet or as_json), "checking", None)
    with store.lock("read", max(0.0, wait)), progress as hook:
        report = _read_archive(store, dataset, lambda _name, n: hook(n))
    sys.stdout.write((cold_report.check_json if as_json else cold_report.check_text)(report))
    return report.exit_code


@app.command("send", epilog=epilog("cold send"))
def send(
    dataset: Annotated[str, typer.Argument(help="The dataset to archive (pool/set).")],
    directory: Annotated[str, typer.Argument(help="The archive directory.")],
    snapshot: Annotated[
        str | None, typer.Option(help="Send up to this snapshot (the part after @).")
    ] = None,
    full: Annotated[bool, typer.Option("--full", help="Start a new chain.")] = False,
    intermediate: Annotated[
        bool, typer.Option(help="-I: keep every snapshot between (default); else -i.")
    ] = True,
    raw: Annotated[bool, typer.Option("--raw", help="zfs send -w (encrypted data).")] = False,
    compressed: Annotated[bool, typer.Option("--compressed", help="zfs send -c.")] = False,
    large_block: Annotated[bool, typer.Option("--large-block", help="zfs send -L.")] = False,
    embed: Annotated[bool, typer.Option("--embed", help="zfs send -e.")] = False,
    hold: Annotated[
        bool,
        typer.Option(
            "--hold", help="Keep the base with a user hold (zverify-cold), not a bookmark."
        ),
    ] = False,
    parity: Percent = None,
    compress: Annotated[
        str | None,
        typer.Option(
            "--compress",
            metavar="ALGO[:LEVEL]",
            help="Compress the file: zstd, gzip or xz, with a level (zstd:19); NAME gets "
            ".zst, .gz or .xz.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    wait: Wait = 0,
) -> int:
    """Archive the next stream of DATASET into DIRECTORY, chosen by GUID from what the archive
    can already restore; validated while written, then its parity made (--parity).  Exit 0
    archived (or nothing new), 2 not."""
    from zverify.cold.plan import NothingToSend, flags_for, plan_send
    from zverify.cold.send import FLAGS, send_to_archive
    from zverify.progress import byte_progress, wanted
    from zverify.report.cold import SEND_SCHEMA
    from zverify.zfs.inventory import snapshots

    asked = {"raw": raw, "compressed": compressed, "large_block": large_block, "embed": embed}
    packing = _compress_option(compress)
    with _locked(directory, wait, "write"):
        archive = _read_archive(directory, dataset)
        _warn(archive)
        source = snapshots(dataset)
        chosen = plan_send(archive.plans.get(dataset), source, snapshot, full, intermediate)
        if isinstance(chosen, NothingToSend):
            nothing = {"schema": SEND_SCHEMA, "sent": None, "reason": chosen.reason}
            _say(as_json, nothing, f"nothing to send: {chosen.reason}")
            return 0
        percent = _parity_level(archive, parity)
        done: list[dict[str, object]] = []
        for step in [p for p in (chosen.link, chosen) if p is not None]:
            flags = [FLAGS[k] for k, on in flags_for(step, asked).items() if on]
            with byte_progress(wanted(quiet or as_json), "sending", None) as hook:
                sent = send_to_archive(
                    dataset, directory, step, flags, hook, hold, percent, packing
                )
            kept_by = "hold" if hold else "bookmark"
            done.append(
                {"file": sent.name, "bytes": sent.bytes, "sha256": sent.sha256,
                 kept_by: sent.keeper, "parity_percent": percent}
            )  # fmt: skip
            if sent.compression is not None:
                done[-1] |= {"compression": sent.compression, "file_bytes": sent.file_bytes}
    doc = {"schema": SEND_SCHEMA, "sent": done[-1], "reason": chosen.reason}
    if chosen.link is not None:
        doc["linked"] = done[0]
    protected = f", {percent}% parity" if percent else ""
    lines = [f"archived {shown(str(d['file']))}: {d['bytes']:,} bytes{protected}" for d in done]
    _say(as_json, doc, "\n".join(lines) + f" ({chosen.reason})")
    return 0


def _compress_option(text: str | None) -> tuple[str, int | None] | None:
    from zverify.sendstream.compressed import parse_compress

    try:
        return None if text is None else parse_compress(text)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _parity_level(archive: "ArchiveReport", asked: int | None) -> int:
    """--parity, else the archive's own level (so that a cron job keeps it), else none."""
    return asked if asked is not None else archive.parity_level or 0


def _locked(directory: str, wait: float, how: str) -> "AbstractContextManager[None]":
    """The archive's lock for the whole command (zverify.cold.lock): how is "read", "write"
    or "delete".  Raises ArchiveError when directory is not a directory that can be read."""
    from zverify.cold import lock

    try:
        mode = os.stat(directory).st_mode
    except OSError as err:
        raise ArchiveError(f"cannot read archive {directory!r}: {err.strerror}") from None
    if not stat.S_ISDIR(mode):
        raise ArchiveError(f"cannot read archive {directory!r}: not a directory")
    wait = max(0.0, wait)
    if how == "read":
        return lock.reading(directory, wait)
    return lock.writing(directory, wait, deleting=how == "delete")


def _store(directories: list[str], recursive: bool) -> "LocalStore":
    """The places of the archive.  Raises ArchiveError naming one that cannot be read."""
    from zverify.cold.store import LocalStore

    return LocalStore(directories, recursive)


def _places(store: "LocalStore") -> str:
    """The places as they would be typed again (with --recursive when it was given)."""
    places = " ".join(shlex.quote(p) for p in store.places)
    return f"--recursive {places}" if store.recursive else places


def _split_places(arguments: list[str]) -> tuple[list[str], list[str]]:
    """`repair DIR... [STREAM]...`: the leading arguments that are directories are the
    places, the rest the streams (a stream is a file, never a directory)."""
    at = next((i for i, a in enumerate(arguments) if not os.path.isdir(a)), len(arguments))
    return arguments[: max(at, 1)], arguments[max(at, 1) :]


def _warn(report: "ArchiveReport") -> None:
    """Send and restore go on beside what `cold check` would report: one line each."""
    for p in report.all_problems:
        print(f"zverify: warning: {p.kind} {shown(p.file)}: {p.message}", file=sys.stderr)


def _read_archive(
    where: "str | LocalStore", dataset: str | None, progress: "ProgressHook | None" = None
) -> "ArchiveReport":
    from zverify.cold.check import check_archive

    try:
        return check_archive(where, dataset, progress)
    except OSError as err:
        raise ArchiveError(f"cannot read archive {where!r}: {err.strerror}") from None


def _say(as_json: bool, doc: Mapping[str, object], text: str) -> None:
    import json

    sys.stdout.write(json.dumps(doc, indent=2) + "\n" if as_json else text + "\n")


@app.command("restore", epilog=epilog("cold restore"))
def restore(
    directories: Places,
    target: Annotated[str, typer.Argument(help="The dataset to create (must not exist).")],
    snapshot: Annotated[
        str | None, typer.Option(help="Snapshot name or GUID (default: the newest restorable).")
    ] = None,
    dataset: Annotated[
        str | None, typer.Option("--dataset", help="Which dataset of the archive.")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan only.")] = False,
    repair_first: Annotated[
        bool,
        typer.Option("--repair", help="First repair damaged streams from their parity."),
    ] = False,
    script_file: Annotated[
        str | None, typer.Option("--script", help="Write the receives as an sh script.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    recursive: Recursive = False,
    wait: Wait = 0,
) -> int:
    """Restore a snapshot from the archive in DIR... (a chain may be spread over them): exit
    0 restored and proven by GUID, 1 the archive cannot (why), 2 error."""
    from zverify.cold import restore as cold_restore
    from zverify.progress import byte_progress, wanted

    store = _store(directories, recursive)
    # no prune deletes a file of the plan meanwhile; a repair replaces files: alone
    with store.lock("delete" if repair_first else "read", max(0.0, wait)):
        report = _read_archive(store, dataset)
        if repair_first and _repair_all(store, report, to=sys.stderr):
            report = _read_archive(store, dataset)
        _warn(report)
        with _hint_repair(store, report):
            plan = cold_restore.plan_restore(report, target, snapshot)
        sys.stdout.write(_plan_text(plan))
        if script_file is not None:
            with open(script_file, "w", errors="surrogateescape") as f:
                f.write(cold_restore.script(plan, report))
        if dry_run or script_file is not None:
            return 0
        cold_restore.check_target(target)
        with _hint_repair(store, report):
            cold_restore.verify_files(plan, report)
        with byte_progress(wanted(quiet), "receiving", plan.snapshot.bytes) as hook:
            cold_restore.receive_all(plan, report, hook)
    at = cold_restore.restored_at(plan, report)
    sys.stdout.write(f"restored {at}@{plan.snapshot.snapshot} (guid {plan.snapshot.guid})\n")
    return 0


def _plan_text(plan: "RestorePlan") -> str:
    head = (
        f"restore {plan.dataset}@{plan.snapshot.snapshot} (guid {plan.snapshot.guid}) into "
        f"{plan.target}: {len(plan.files)} file(s), {plan.snapshot.bytes:,} bytes"
    )
    return "\n".join([head, *(f"  {shown(name)}" for name in plan.files)]) + "\n"


@app.command("prune", epilog=epilog("cold prune"))
def prune(
    directories: Places,
    dataset: Annotated[
        str | None, typer.Option("--dataset", help="Only this dataset (pool/set).")
    ] = None,
    keep_chains: Annotated[
        int, typer.Option("--keep-chains", min=1, help="Keep the newest N chains.")
    ] = 1,
    trial_receive: Annotated[
        str | None,
        typer.Option(
            "--trial-receive",
            metavar="POOL/SCRATCH",
            help="First receive the kept chain into this new dataset (destroyed after).",
        ),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Delete (default: only say what).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    recursive: Recursive = False,
    wait: Wait = 0,
) -> int:
    """Remove old chains, each only when the newer chain was read completely just now (and,
    with --trial-receive, received), deleting only inside DIR...: exit 0 pruned or nothing
    to prune or dry run, 1 refused (why), 2 error."""
    from zverify.cold import prune as cold_prune
    from zverify.progress import byte_progress, wanted
    from zverify.report import cold as cold_report

    store = _store(directories, recursive)
    # with --yes, the archive to itself from the proof to the last deletion
    with store.lock("delete" if yes else "read", max(0.0, wait)):
        with byte_progress(wanted(quiet or as_json), "verifying", None) as hook:
            report = _read_archive(store, dataset, lambda _name, n: hook(n))
        decisions = cold_prune.plan_prune(report, keep_chains)
        why_not = cold_prune.blocked(report)
        acting = [d for d in decisions if d.files and d.refused is None]
        actions: dict[str, dict[str, object]] = {d.dataset: {} for d in decisions}
        if yes:
            for d in acting:
                actions[d.dataset] = _prune_one(store, report, d, trial_receive)
    render = cold_report.prune_json if as_json else cold_report.prune_text
    sys.stdout.write(render(decisions, actions, yes, why_not, report.all_problems))
    refused = 1 if why_not or any(d.refused for d in decisions) else 0
    return exitcodes.worst([report.exit_code if refused else 0, refused])


def _prune_one(
    store: "LocalStore", report: "ArchiveReport", d: "DatasetPrune", scratch: str | None
) -> dict[str, object]:
    from zverify.cold import prune as cold_prune

    if scratch is not None:
        cold_prune.trial_receive(report, d, scratch)
    deleted = cold_prune.delete_files(store, d, report)
    released, note = cold_prune.release_keepers(d)
    return {"deleted": deleted, "released": released, "note": note}


@app.command("clean", epilog=epilog("cold clean"))
def clean(
    directories: Places,
    yes: Annotated[bool, typer.Option("--yes", help="Remove (default: only say what).")] = False,
    recursive: Recursive = False,
    wait: Wait = 0,
) -> int:
    """Remove the NAME.partial files that interrupted sends left, only when no send is
    writing them (the lock proves it): exit 0 removed or nothing to remove or dry run, 1 a
    .partial left alone (why), 2 error."""
    from zverify.cold.clean import clean as clean_archive
    from zverify.report import cold as cold_report

    store = _store(directories, recursive)
    with store.lock("delete" if yes else "read", max(0.0, wait)):
        found: list[Leftover] = clean_archive(store, yes)
    sys.stdout.write(cold_report.clean_text(store.shown, found, yes))
    return 1 if any(f.left for f in found) else 0


@contextlib.contextmanager
def _hint_repair(store: "LocalStore", report: "ArchiveReport") -> Iterator[None]:
    """A refused restore says so when the archive's parity can repair what is in the way."""
    from zverify.errors import UnrestorableError

    try:
        yield
    except UnrestorableError as err:
        fixable = [
            f.name
            for f in report.files
            if f.parity and f.parity.repair and f.parity.repair.status == "repairable"
        ]
        if not fixable:
            raise
        listed = ", ".join(map(shown, fixable))
        raise UnrestorableError(
            f"{err}; repairable from their parity: {listed} (`zverify cold repair "
            f"{_places(store)}`, or restore --repair)"
        ) from None


@app.command("parity", epilog=epilog("cold parity"))
def parity(
    directories: Places,
    percent: Percent = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    recursive: Recursive = False,
    wait: Wait = 0,
) -> int:
    """Give every intact stream PAR2 parity: added where there is none, made again where it
    is damaged or of another file (default level: the archive's, else 10%).  Exit 0 every
    stream protected, 1 a stream left without (not intact: repair it first), 2 error."""
    from zverify.cold import protect
    from zverify.progress import byte_progress, wanted

    store = _store(directories, recursive)
    with store.lock("delete", max(0.0, wait)):
        with byte_progress(wanted(quiet), "checking", None) as hook:
            report = _read_archive(store, None, lambda _name, n: hook(n))
        level = _parity_level(report, percent) or protect.DEFAULT_PERCENT
        done = protect.protect(report, level)
    for name, status, message in done:
        sys.stdout.write(f"{status:<9} {shown(name)}: {message}\n")
    left = sum(status == "left" for _, status, _ in done)
    summary = f"{len(done) - left} stream(s) protected" + (f", {left} left without" if left else "")
    sys.stdout.write(summary + "\n")
    return 1 if left else 0


@app.command("repair", epilog=epilog("cold repair"))
def repair(
    arguments: Annotated[
        list[str],
        typer.Argument(
            metavar="DIR... [STREAM]...",
            help="The archive's directories, then the streams to repair (default: every "
            "damaged one with parity).",
        ),
    ],
    yes: Annotated[
        bool, typer.Option("--yes", help="Remove the damaged originals (NAME.damaged).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    recursive: Recursive = False,
    wait: Wait = 0,
) -> int:
    """Repair damaged streams from their parity into new files, prove each completely (stream
    checksums, GUIDs and SHA-256 of its sidecar, MD5 of its parity), then replace it, keeping
    the original as NAME.damaged until --yes.  Exit 0 repaired (or nothing damaged), 1 a
    stream cannot be repaired (why), 2 error."""
    from zverify.cold import repair as cold_repair
    from zverify.progress import byte_progress, wanted
    from zverify.report import cold as cold_report

    directories, files = _split_places(arguments)
    store = _store(directories, recursive)
    with store.lock("delete", max(0.0, wait)):
        with byte_progress(wanted(quiet or as_json), "checking", None) as hook:
            report = _read_archive(store, None, lambda _name, n: hook(n))
        outcomes = _repair_all(store, report, files, None if as_json else sys.stdout)
        removed: list[str] = []
        if yes:
            removed = cold_repair.drop_damaged(store, report, outcomes)
    worst = {"failed": 2, "unrepairable": 1, "no-parity": 1}
    code = exitcodes.worst([worst.get(o.status, 0) for o in outcomes] or [0])
    if as_json:
        sys.stdout.write(cold_report.repair_json(store.shown, outcomes, removed, code))
    else:
        sys.stdout.write(cold_report.repair_text(outcomes, removed))
    return code


def _repair_all(
    store: "LocalStore",
    report: "ArchiveReport",
    asked: list[str] | None = None,
    to: TextIO | None = sys.stdout,
) -> "list[Outcome]":
    """Repair what was asked (default every damaged stream with parity), one line each as
    it is done (to stdout or stderr; None: silent)."""
    from zverify.cold import repair as cold_repair
    from zverify.cold import sidecar
    from zverify.report.cold import repair_line

    outcomes = []
    for f in cold_repair.wanted(report, asked or []):
        here, name = store.directory_of(f.name), os.path.basename(f.name)
        outcome = cold_repair.repair(store, f, sidecar.read_object(here, name))
        if to is not None:
            to.write(repair_line(outcome))
            to.flush()
        outcomes.append(outcome)
    return outcomes
