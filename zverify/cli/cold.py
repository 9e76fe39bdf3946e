"""`zverify cold send|check|restore|prune|clean|parity|repair|lock`: send streams archived as files
(zverify.cold).

Each command holds the archive's lock for its whole run (zverify.cold.store.lock): send as a
writer, check and restore (and the dry runs) as readers; prune --yes, clean --yes, parity,
repair and restore --repair exclusively.  A lock another zverify holds is refused at once
(exit 2), or waited for up to --wait SECONDS.

Long because: nine subcommands, each a typer signature of a dozen documented options (the
help and man page come from them); each body is parse, one call into zverify.cold.operations,
render with zverify.report.cold.
"""

import os
import sys
import typing
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Annotated

import typer

from zverify.cli import units
from zverify.cli.epilogs import epilog
from zverify.errors import UsageError

if TYPE_CHECKING:
    from zverify.cold.consolidate import Consolidated, Digested
    from zverify.cold.contents import Recorder
    from zverify.cold.operations import Bars, Events, Hook, Result
    from zverify.cold.store import Store
    from zverify.drill.drill import DrillOptions

app = typer.Typer(
    name="cold",
    help="Send-stream archives on cold storage: send, check, scrub, restore, drill, prune, "
    "clean, parity, repair, lock, consolidate, digest.",
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
        help="The archive: one directory, or several (a chain may be spread over them), or "
        "one s3://BUCKET/PREFIX.",
    ),
]

EndpointUrl = Annotated[
    str | None,
    typer.Option(
        "--endpoint-url",
        metavar="URL",
        show_default=False,
        help="The S3 server of an s3:// archive (default: AWS, or AWS_ENDPOINT_URL and the "
        "AWS configuration files).",
    ),
]

Recursive = Annotated[
    bool,
    typer.Option(
        "--recursive",
        "-r",
        help="Also the directories below each DIR (one per dataset, any depth; a symlinked "
        "directory is never followed), or the prefixes below an s3:// URL's.",
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

# One meaning per flag, in every cold command (as in `zverify compare`).
Json = Annotated[bool, typer.Option("--json", help="Print one JSON document.")]
Quiet = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="Print only the verdict line; no progress bar."),
]
NoProgress = Annotated[
    bool, typer.Option("--no-progress", help="No progress bar (stderr on a terminal).")
]
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose", "-v", help="Every restorable snapshot and every file read, a line each."
    ),
]
DryRun = Annotated[
    bool,
    typer.Option("--dry-run", "-n", help="Say what would be done; write and delete nothing."),
]
Dataset = Annotated[str | None, typer.Option("--dataset", help="Only this dataset (pool/set).")]
Directory = Annotated[str, typer.Argument(help="The archive directory.")]


@app.command("check", epilog=epilog("cold check"))
def check(
    directories: Places,
    dataset: Dataset = None,
    as_json: Json = False,
    as_jsonl: Annotated[
        bool,
        typer.Option(
            "--jsonl",
            help="Print JSON Lines: a header, a line per dataset, snapshot, file and archive "
            "problem, a summary.",
        ),
    ] = False,
    quiet: Quiet = False,
    verbose: Verbose = False,
    no_progress: NoProgress = False,
    recursive: Recursive = False,
    wait: Wait = 0,
    endpoint_url: EndpointUrl = None,
    depth: Annotated[
        str,
        typer.Option(
            "--depth",
            metavar="full|sample|metadata",
            help="full: every byte read and validated (the only depth that proves content and "
            "chains).  metadata (s3:// only): listing, HEAD and sidecars compared, no stream "
            "byte read.  sample (s3:// only): metadata, then random runs of records (--sample "
            "PCT of each stream's bytes) read by range and proven by the stream's checksums.",
        ),
    ] = "full",
    sample: Annotated[
        float,
        typer.Option(
            "--sample",
            metavar="PCT",
            help="--depth sample: the share of each stream's bytes to read, in percent "
            "(0 < PCT <= 100).",
        ),
    ] = 1.0,
    ledger: Annotated[
        str | None,
        typer.Option(
            "--ledger",
            metavar="PATH",
            show_default=False,
            help="Record each file's proof in this ledger (default: the archive's own "
            ".zverify-ledger.jsonl, when it has one).",
        ),
    ] = None,
    digest: Annotated[
        bool,
        typer.Option(
            "--digest",
            help="Also the logical state digest of each dataset's newest restorable snapshot, "
            "over every route that restores it (as `cold digest`): routes that disagree are "
            "a problem, a digest that cannot be made is not proven.",
        ),
    ] = False,
) -> int:
    """Read every stream completely, rebuild the chains by GUID across every DIR: exit 0
    every file intact and every incremental reachable from a full, 1 anything else found, 2
    could not read."""
    from zverify.cold import operations

    if as_json and as_jsonl:
        raise UsageError("--json and --jsonl: choose one")
    if depth not in ("full", "sample", "metadata"):
        raise UsageError(f"--depth {depth!r}: full, sample or metadata")
    if not 0 < sample <= 100:
        raise UsageError(f"--sample {sample:g}: a percentage above 0, at most 100")
    store = _store(directories, recursive, endpoint_url)
    if depth != "full" and store.uses_local_files:
        raise UsageError(f"--depth {depth} is for s3:// archives: a file's bytes are its proof")
    bars = _bars(quiet or no_progress or as_json or as_jsonl)
    if ledger is not None and depth != "full":
        raise UsageError(f"--ledger records full proofs: --depth {depth} proves less")
    if digest and depth != "full":
        raise UsageError(f"--digest reads every route completely: --depth {depth} reads less")
    report = operations.check_places(
        store, dataset, max(0.0, wait), bars, depth, sample, ledger, digest
    )
    if as_jsonl:
        from zverify.report.cold import check as check_report

        sys.stdout.write(check_report.check_jsonl(report))
        return report.exit_code
    return _show(report, as_json, quiet, verbose)


LedgerPath = Annotated[
    str | None,
    typer.Option(
        "--ledger",
        metavar="PATH",
        show_default=False,
        help="The proof ledger (default: .zverify-ledger.jsonl in the archive's first "
        "directory; required for s3://; elsewhere for a read-only archive).",
    ),
]


@app.command("scrub", epilog=epilog("cold scrub"))
def scrub(
    directories: Places,
    max_bytes: Annotated[
        str | None,
        typer.Option(
            "--max-bytes",
            metavar="N",
            show_default=False,
            help="Start no file once N bytes were read (200G, 1.5TiB: powers of 1024; 200GB: "
            "of 1000); the file that crosses it is finished.",
        ),
    ] = None,
    max_duration: Annotated[
        str | None,
        typer.Option(
            "--max-duration",
            metavar="D",
            show_default=False,
            help="Start no file after D (seconds, or 30m, 1h30m, 6h, 1d); the one running is "
            "finished.",
        ),
    ] = None,
    max_age: Annotated[
        str | None,
        typer.Option(
            "--max-age",
            metavar="DAYS",
            show_default=False,
            help="Skip files proven less than DAYS ago (or 12h, 35d); older proofs count as "
            "unproven.",
        ),
    ] = None,
    ledger: LedgerPath = None,
    prometheus: Annotated[
        str | None,
        typer.Option(
            "--prometheus",
            metavar="FILE",
            show_default=False,
            help="Also write a node_exporter textfile (replaced atomically): age of the "
            "oldest proof, bytes unproven, damaged files, per archive and dataset.",
        ),
    ] = None,
    drill_pool: Annotated[
        str | None,
        typer.Option(
            "--drill-pool",
            metavar="POOL",
            help="Then drill (`cold drill`) the dataset whose last passing drill is oldest, "
            "receiving into a new dataset on POOL.",
        ),
    ] = None,
    drill_scratch_file: Annotated[
        str | None,
        typer.Option(
            "--drill-scratch-file",
            metavar="SIZE",
            help="Then drill it into a pool on a sparse file of SIZE in /var/tmp.",
        ),
    ] = None,
    drill_max_bytes: Annotated[
        str | None,
        typer.Option(
            "--drill-max-bytes", metavar="N", help="The drill refuses a longer route (exit 2)."
        ),
    ] = None,
    as_json: Json = False,
    quiet: Quiet = False,
    verbose: Verbose = False,
    no_progress: NoProgress = False,
    recursive: Recursive = False,
    wait: Wait = 0,
    endpoint_url: EndpointUrl = None,
) -> int:
    """Prove the archive's files again, least recently proven first (damaged and never-proven
    ones before all), each read completely as check reads it, within a budget, each proof
    recorded in the ledger: repeated runs rotate through the archive.  Exit 0 every file
    read proven, 1 damage found, 2 could not read, or the ledger is not intact."""
    from zverify.cold import operations
    from zverify.cold.proof import scrub as scrubbing
    from zverify.report.cold import scrub as scrub_report

    budget = scrubbing.Budget(
        _bytes_option(max_bytes),
        _duration_option(max_duration),
        _age_option(max_age),
    )
    place = _drill_place(drill_pool, drill_scratch_file, drill_max_bytes)
    store = _store(directories, recursive, endpoint_url)
    bars = _bars(quiet or no_progress or as_json)
    result = operations.scrub_places(store, ledger, budget, max(0.0, wait), bars)
    if place is None:
        if prometheus is not None:
            scrubbing.write_atomically(prometheus, scrub_report.prometheus(result))
        return _show(result, as_json, quiet, verbose)
    from zverify.drill.rotation import drill_next
    from zverify.report import drill as drill_report

    both = drill_next(store, result, place, max(0.0, wait), bars)
    if prometheus is not None:
        scrubbing.write_atomically(prometheus, scrub_report.prometheus(both.scrub))
    sys.stdout.write(drill_report.render_rotation(both, as_json, quiet))
    return both.exit_code


def _drill_place(
    pool: str | None, scratch_file: str | None, max_bytes: str | None
) -> "DrillOptions | None":
    """Where scrub's drill receives, or None when no drill was asked for."""
    from zverify.drill.drill import DrillOptions

    if pool is None and scratch_file is None:
        if max_bytes is not None:
            raise UsageError(
                "--drill-max-bytes is for a drill: give --drill-pool or --drill-scratch-file"
            )
        return None
    if pool is not None and scratch_file is not None:
        raise UsageError("give one of --drill-pool and --drill-scratch-file")
    return DrillOptions(
        pool=pool,
        scratch_bytes=_bytes_option(scratch_file, "--drill-scratch-file"),
        max_bytes=_bytes_option(max_bytes, "--drill-max-bytes"),
    )


def _bytes_option(text: str | None, option: str = "--max-bytes") -> int | None:
    return None if text is None else units.size(text, option)


def _duration_option(text: str | None) -> float | None:
    return None if text is None else units.duration(text, "--max-duration")


def _age_option(text: str | None) -> float | None:
    """--max-age, in seconds: 0 (every proof is due) or more, never nan nor infinite
    (either would make no proof ever due again)."""
    return None if text is None else units.age(text, "--max-age")


@app.command("send", epilog=epilog("cold send"))
def send(
    dataset: Annotated[str, typer.Argument(help="The dataset to archive (pool/set).")],
    directory: Directory,
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
    manifest: Annotated[
        bool,
        typer.Option(
            "--manifest",
            help="Also record the snapshot's files in NAME.manifest, for `cold drill` once "
            "the source is gone.",
        ),
    ] = False,
    compress: Annotated[
        str | None,
        typer.Option(
            "--compress",
            metavar="ALGO[:LEVEL]",
            help="Compress the file: zstd, gzip or xz, with a level (zstd:19); NAME gets "
            ".zst, .gz or .xz.",
        ),
    ] = None,
    storage_class: Annotated[
        str | None,
        typer.Option(
            "--storage-class",
            metavar="CLASS",
            help="s3://: the new stream's storage class (STANDARD_IA, GLACIER, DEEP_ARCHIVE, ...; "
            "its sidecar stays STANDARD).",
        ),
    ] = None,
    also: Annotated[
        list[str] | None,
        typer.Option(
            "--also",
            metavar="DIR",
            help="Read the chain from this directory too (another disk of the archive); "
            "the new file goes into DIRECTORY.",
        ),
    ] = None,
    dry_run: DryRun = False,
    as_json: Json = False,
    quiet: Quiet = False,
    no_progress: NoProgress = False,
    wait: Wait = 0,
    endpoint_url: EndpointUrl = None,
) -> int:
    """Archive the next stream of DATASET into DIRECTORY, chosen by GUID from what the archive
    can already restore; validated while written, then its manifest (--manifest) and parity
    (--parity) made.  With -n, the files it would write and the sizes `zfs send -nvP`
    estimates.  Exit 0 archived (or nothing new, or dry run), 2 not."""
    from zverify.cold import operations

    asked = {"raw": raw, "compressed": compressed, "large_block": large_block, "embed": embed}
    options = operations.SendOptions(
        snapshot, full, intermediate, asked, hold, parity, _compress_option(compress), dry_run,
        _recorder() if manifest else None,
    )  # fmt: skip
    bars = _bars(quiet or no_progress or as_json)
    store = _store([directory, *(also or [])], False, endpoint_url, storage_class)
    result = operations.send_next(dataset, store, options, max(0.0, wait), bars, _events())
    return _show(result, as_json, quiet)


def _recorder() -> "Recorder":
    """The manifest engine, given to cold (which never imports it) by the command line."""
    from zverify.drill.record import record_snapshot

    return record_snapshot


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
    dry_run: DryRun = False,
    repair_first: Annotated[
        bool,
        typer.Option("--repair", help="First repair damaged streams from their parity."),
    ] = False,
    script_file: Annotated[
        str | None, typer.Option("--script", help="Write the receives as an sh script.")
    ] = None,
    thaw: Annotated[
        bool,
        typer.Option(
            "--thaw",
            help="s3:// in GLACIER or DEEP_ARCHIVE: ask for the objects of the snapshot's "
            "chain (planned from the sidecars) to be thawed (RestoreObject), and restore once "
            "they are readable (run it again; -n: only list).",
        ),
    ] = False,
    tier: Annotated[
        str, typer.Option("--tier", metavar="TIER", help="Standard, Bulk or Expedited.")
    ] = "Standard",
    days: Annotated[
        int, typer.Option("--days", min=1, help="How long a thawed copy stays readable.")
    ] = 7,
    as_json: Json = False,
    quiet: Quiet = False,
    no_progress: NoProgress = False,
    recursive: Recursive = False,
    wait: Wait = 0,
    endpoint_url: EndpointUrl = None,
) -> int:
    """Restore a snapshot from the archive in DIR... (a chain may be spread over them): exit
    0 restored and proven by GUID (or planned: -n, --script), 1 the archive cannot (why), 2
    error."""
    from zverify.cold import operations

    if dry_run and script_file is not None:
        raise UsageError("--script writes a file and --dry-run writes nothing: give one")
    if tier not in ("Standard", "Bulk", "Expedited"):
        raise UsageError(f"--tier {tier!r}: Standard, Bulk or Expedited")
    store = _store(directories, recursive, endpoint_url)
    if thaw and store.bucket is None:
        raise UsageError("--thaw is for s3:// archives: a file needs no thaw")
    options = operations.RestoreOptions(
        snapshot, dataset, repair_first, dry_run, script_file, (days, tier) if thaw else None
    )
    bars = _bars(quiet or no_progress or as_json)
    events = _events(repairs_to_stderr=not quiet)
    result = operations.restore_snapshot(store, target, options, max(0.0, wait), bars, events)
    return _show(result, as_json, quiet)


@app.command("prune", epilog=epilog("cold prune"))
def prune(
    directories: Places,
    dataset: Dataset = None,
    keep_chains: Annotated[
        int, typer.Option("--keep-chains", min=1, help="Keep the newest N chains.")
    ] = 1,
    keep_within: Annotated[
        str | None,
        typer.Option(
            "--keep-within",
            metavar="AGE",
            help="Also keep every chain with a snapshot made within AGE (days, or 90d, 12h, "
            "26w) of now, by its stream's creation time.",
        ),
    ] = None,
    trial_receive: Annotated[
        str | None,
        typer.Option(
            "--trial-receive",
            metavar="POOL/SCRATCH",
            help="First receive the kept chain into this new dataset (destroyed after).",
        ),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Delete (default: only say what).")] = False,
    dry_run: DryRun = False,
    as_json: Json = False,
    quiet: Quiet = False,
    no_progress: NoProgress = False,
    recursive: Recursive = False,
    wait: Wait = 0,
    endpoint_url: EndpointUrl = None,
) -> int:
    """Remove old chains, each only when the newer chain was read completely just now (and,
    with --trial-receive, received), deleting only inside DIR...: exit 0 pruned or nothing
    to prune or dry run (the default, or -n), 1 refused (why), 2 error."""
    from zverify.cold import operations

    yes = _acting(yes, dry_run)
    bars = _bars(quiet or no_progress or as_json)
    args = (
        _store(directories, recursive, endpoint_url),
        dataset,
        keep_chains,
        yes,
        trial_receive,
        max(0.0, wait),
        bars,
        None if keep_within is None else units.age(keep_within, "--keep-within"),
    )
    return _show(operations.prune_chains(*args), as_json, quiet)


@app.command("lock", epilog=epilog("cold lock"))
def lock(
    directory: Annotated[str, typer.Argument(metavar="s3://BUCKET/PREFIX")],
    days: Annotated[int, typer.Option("--days", min=1, help="Lock until this many days from now.")],
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            metavar="MODE",
            help="GOVERNANCE (privileged users may lift it) or COMPLIANCE (nobody may, "
            "until the date).  A COMPLIANCE lock stays COMPLIANCE.",
        ),
    ] = "GOVERNANCE",
    keep_chains: Annotated[
        int, typer.Option("--keep-chains", min=1, help="The chains prune keeps: the newest N.")
    ] = 1,
    dry_run: DryRun = False,
    as_json: Json = False,
    quiet: Quiet = False,
    no_progress: NoProgress = False,
    wait: Wait = 0,
    endpoint_url: EndpointUrl = None,
) -> int:
    """Extend the object lock of every file of the chains prune keeps (and their sidecars)
    to --days from now, never shortening one: run it after each send, so that a chain that
    grew never has an unlocked base.  Exit 0 locked, 2 error."""
    from zverify.cold import operations

    if mode not in ("GOVERNANCE", "COMPLIANCE"):
        raise UsageError(f"--mode {mode!r}: GOVERNANCE or COMPLIANCE")
    store = _store([directory], False, endpoint_url)
    if store.bucket is None:
        raise UsageError("cold lock is for s3:// archives in a bucket with object lock")
    bars = _bars(quiet or no_progress or as_json)
    result = operations.lock_chains(store, days, mode, keep_chains, dry_run, max(0.0, wait), bars)
    return _show(result, as_json, quiet)


@app.command("clean", epilog=epilog("cold clean"))
def clean(
    directories: Places,
    yes: Annotated[bool, typer.Option("--yes", help="Remove (default: only say what).")] = False,
    dry_run: DryRun = False,
    as_json: Json = False,
    quiet: Quiet = False,
    no_progress: NoProgress = False,  # accepted as everywhere: clean reads no stream
    recursive: Recursive = False,
    wait: Wait = 0,
    endpoint_url: EndpointUrl = None,
) -> int:
    """Remove the NAME.partial files that interrupted sends left (and the work directories of
    interrupted parity and repair runs), only when no run holds them (the lock proves it):
    exit 0 removed or nothing to remove or dry run (the default, or -n), 1 a leftover left
    alone (why), 2 error."""
    from zverify.cold import operations

    store = _store(directories, recursive, endpoint_url)
    result = operations.clean_places(store, _acting(yes, dry_run), max(0.0, wait))
    return _show(result, as_json, quiet)


@app.command("parity", epilog=epilog("cold parity"))
def parity(
    directories: Places,
    percent: Percent = None,
    dry_run: DryRun = False,
    as_json: Json = False,
    quiet: Quiet = False,
    no_progress: NoProgress = False,
    recursive: Recursive = False,
    wait: Wait = 0,
    endpoint_url: EndpointUrl = None,
) -> int:
    """Give every intact stream PAR2 parity: added where there is none, made again where it
    is damaged or of another file (default level: the archive's, else 10%).  Exit 0 every
    stream protected (or would be: -n), 1 a stream left without (not intact: repair it
    first), 2 error."""
    from zverify.cold import operations

    bars = _bars(quiet or no_progress or as_json)
    store = _store(directories, recursive, endpoint_url)
    result = operations.protect_streams(store, percent, dry_run, max(0.0, wait), bars)
    return _show(result, as_json, quiet)


@app.command("repair", epilog=epilog("cold repair"))
def repair(
    arguments: Annotated[
        list[str],
        typer.Argument(
            metavar="DIR... [STREAM]...",
            help="The archive's directories, then the streams to repair (default: every "
            "one that is not intact).",
        ),
    ],
    remove_damaged: Annotated[
        bool,
        typer.Option("--remove-damaged", help="Then remove the damaged originals (NAME.damaged)."),
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", hidden=True, help="Deprecated: --remove-damaged.")
    ] = False,
    dry_run: DryRun = False,
    as_json: Json = False,
    quiet: Quiet = False,
    no_progress: NoProgress = False,
    recursive: Recursive = False,
    wait: Wait = 0,
    endpoint_url: EndpointUrl = None,
) -> int:
    """Repair damaged streams from their parity into new files, prove each completely (stream
    checksums, GUIDs and SHA-256 of its sidecar, MD5 of its parity), then replace it, keeping
    the original as NAME.damaged until --remove-damaged (only when NAME is proven to replace
    it).  Exit 0 repaired (or nothing damaged, or all repairable: -n), 1 a stream cannot be
    repaired or a damaged original is kept (why), 2 error or a file not read."""
    from zverify.cold import operations

    _acting(yes, dry_run)  # -n --yes: a usage error, as in prune and clean
    if yes:
        print(
            "zverify: warning: `cold repair --yes` is deprecated (--yes only ever means "
            '"act"): use --remove-damaged',
            file=sys.stderr,
        )
    quiet_lines = quiet or as_json or dry_run  # a dry run lists its outcomes at the end
    bars = _bars(quiet or no_progress or as_json)
    directories, files = _split_places(arguments)
    store = _store(directories, recursive, endpoint_url)
    result = operations.repair_streams(
        store, files, remove_damaged or yes, dry_run, max(0.0, wait), bars,
        _events(repairs_to_stdout=not quiet_lines),
    )  # fmt: skip
    return _show(result, as_json, quiet)


@app.command("consolidate", epilog=epilog("cold consolidate"))
def consolidate(
    directories: Places,
    dataset: Dataset = None,
    snapshot: Annotated[
        str | None,
        typer.Option(help="Snapshot name or GUID (default: the newest restorable)."),
    ] = None,
    into: Annotated[
        str | None,
        typer.Option(
            "--into",
            metavar="DIR",
            show_default=False,
            help="Write the new full into this directory (default: the first DIR).",
        ),
    ] = None,
    dry_run: DryRun = False,
    as_json: Json = False,
    quiet: Quiet = False,
    no_progress: NoProgress = False,
    recursive: Recursive = False,
    wait: Wait = 0,
    endpoint_url: EndpointUrl = None,
) -> int:
    """Write NAME@S.zfsfull, a full stream of snapshot S made from the archive alone (the
    route `cold restore` would receive, merged offline), validated as it is written and
    kept only when its logical state digest equals the chain's.  Exit 0 written (or
    planned: -n), 1 the digests differ (nothing kept), 2 refused or not read."""
    from zverify.cold import consolidate as consolidating

    store = _store(directories, recursive, endpoint_url)
    target = store if into is None and store.uses_local_files else None
    if target is None:
        target = _store([into or directories[0]], False, endpoint_url)
    bars = _bars(quiet or no_progress or as_json)
    with bars("reading", None) as hook:
        progress = (lambda _name, n: hook(n)) if hook else None
        result = consolidating.consolidate(
            store, target, dataset, snapshot, dry_run, max(0.0, wait),
            _consolidate_argv(directories, dataset, snapshot, into), progress,
        )  # fmt: skip
    return _show_own(result, as_json, quiet)


@app.command("digest", epilog=epilog("cold digest"))
def digest(
    directories: Places,
    dataset: Dataset = None,
    snapshot: Annotated[
        str | None,
        typer.Option(help="Snapshot name or GUID (default: the newest restorable)."),
    ] = None,
    as_json: Json = False,
    quiet: Quiet = False,
    no_progress: NoProgress = False,
    recursive: Recursive = False,
    wait: Wait = 0,
    endpoint_url: EndpointUrl = None,
) -> int:
    """Print the logical state digest of snapshot S (its content, attributes, bonus and
    spill blocks, however they were sent) per route that restores it: each chain from a
    full.  Exit 0 every route gives one digest, 1 they differ (the first object named), 2
    refused or not read."""
    from zverify.cold import consolidate as consolidating

    store = _store(directories, recursive, endpoint_url)
    bars = _bars(quiet or no_progress or as_json)
    with bars("reading", None) as hook:
        progress = (lambda _name, n: hook(n)) if hook else None
        result = consolidating.digest(store, dataset, snapshot, max(0.0, wait), progress)
    return _show_own(result, as_json, quiet)


def _consolidate_argv(
    places: list[str], dataset: str | None, snapshot: str | None, into: str | None
) -> list[str]:
    """The command as its sidecar records it (what was asked, not how it was typed)."""
    asked = [("--dataset", dataset), ("--snapshot", snapshot), ("--into", into)]
    return ["cold", "consolidate", *(a for k, v in asked if v for a in (k, v)), *places]


def _show_own(result: "Consolidated | Digested", as_json: bool, quiet: bool) -> int:
    from zverify.report import consolidate as consolidate_report

    sys.stdout.write(consolidate_report.render(result, as_json, quiet))
    return result.exit_code


def _compress_option(text: str | None) -> tuple[str, int | None] | None:
    from zverify.sendstream.compressed import parse_compress

    try:
        return None if text is None else parse_compress(text)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _store(
    directories: list[str],
    recursive: bool,
    endpoint_url: str | None,
    storage_class: str | None = None,
) -> "Store":
    """The places of the archive (directories, or one s3:// URL).  Raises ArchiveError
    naming one that cannot be read."""
    from zverify.cold.store import open_store

    return open_store(directories, recursive, endpoint_url, storage_class)


def _split_places(arguments: list[str]) -> tuple[list[str], list[str]]:
    """`repair DIR... [STREAM]...`: the leading arguments that are directories are the
    places, the rest the streams (a stream is a file, never a directory)."""
    at = next((i for i, a in enumerate(arguments) if not os.path.isdir(a)), len(arguments))
    return arguments[: max(at, 1)], arguments[max(at, 1) :]


def _acting(yes: bool, dry_run: bool) -> bool:
    """--yes acts; without it (or with -n) a command that deletes only says what."""
    if yes and dry_run:
        raise UsageError("--yes and --dry-run contradict each other: give one")
    return yes


def _bars(off: bool) -> "Bars":
    from zverify.progress import byte_progress, wanted

    show = wanted(off)

    def bar(what: str, total: int | None) -> "AbstractContextManager[Hook | None]":
        return byte_progress(show, what, total)

    return bar


def _events(repairs_to_stderr: bool = False, repairs_to_stdout: bool = False) -> "Events":
    """Warnings about the archive on stderr as soon as it is read; each repair's line as it
    is done (restore --repair: stderr, repair: stdout)."""
    from zverify.cold.operations import Events
    from zverify.report.cold import changes, check

    out = sys.stderr if repairs_to_stderr else sys.stdout if repairs_to_stdout else None
    events = Events(archive_read=lambda report: _write(sys.stderr, check.warnings(report)))
    if out is not None:
        events.repaired = lambda outcome: _write(out, changes.repair_line(outcome))
    events.thawing = lambda objects, asked: _write(sys.stderr, changes.thaw_lines(objects, asked))
    return events


def _write(to: "typing.TextIO", text: str) -> None:
    to.write(text)
    to.flush()


def _show(result: "Result", as_json: bool, quiet: bool, verbose: bool = False) -> int:
    from zverify.report import cold as cold_report

    sys.stdout.write(cold_report.render(result, as_json, quiet, verbose))
    return result.exit_code


@app.command("drill", epilog=epilog("cold drill"))
def drill(
    directories: Places,
    dataset: Annotated[
        str | None, typer.Option("--dataset", help="Which dataset of the archive.")
    ] = None,
    snapshot: Annotated[
        str | None, typer.Option(help="Snapshot name or GUID (default: the newest restorable).")
    ] = None,
    pool: Annotated[
        str | None,
        typer.Option(help="Receive into a new dataset on this pool (destroyed after)."),
    ] = None,
    scratch_file: Annotated[
        str | None,
        typer.Option(
            "--scratch-file",
            metavar="SIZE",
            help="Receive into a pool on a new sparse file of SIZE (64G, 1.5TiB, 200GB) in "
            "--scratch-dir, destroyed after with its file.",
        ),
    ] = None,
    scratch_dir: Annotated[
        str, typer.Option("--scratch-dir", metavar="DIR", help="Where the scratch file is made.")
    ] = "/var/tmp",
    against: Annotated[
        str | None,
        typer.Option(
            metavar="SNAPSHOT|MANIFEST",
            help="Compare with this snapshot (POOL/DS@SNAP) or manifest (default: the source "
            "snapshot of the same GUID, when it is on this host).",
        ),
    ] = None,
    max_bytes: Annotated[
        str | None,
        typer.Option(
            "--max-bytes", metavar="N", help="Refuse (exit 2) a route of more stream bytes."
        ),
    ] = None,
    ledger_path: Annotated[
        str | None,
        typer.Option(
            "--ledger",
            metavar="PATH",
            help="Record the drill in this ledger (default: the archive's own; a bucket's "
            "drill is recorded only with this).",
        ),
    ] = None,
    threads: Annotated[
        int | None, typer.Option(help="Hashing threads (default: all cores).")
    ] = None,
    certificate: Annotated[
        str | None,
        typer.Option(
            "--certificate",
            metavar="FILE",
            help="Also write a certificate of this drill (`zverify certificate verify`).",
        ),
    ] = None,
    as_json: Json = False,
    quiet: Quiet = False,
    no_progress: NoProgress = False,
    recursive: Recursive = False,
    wait: Wait = 0,
    endpoint_url: EndpointUrl = None,
) -> int:
    """Receive a snapshot of the archive in DIR... into a scratch dataset, compare its files
    with the source snapshot (or a manifest), destroy the scratch and record the drill in
    the ledger: exit 0 it restores the source's files, 1 it does not, 2 not drilled."""
    from zverify.drill.drill import DrillOptions
    from zverify.drill.drill import drill as run_drill
    from zverify.report import drill as drill_report

    if (pool is None) == (scratch_file is None):
        raise UsageError("give where to receive: --pool POOL or --scratch-file SIZE")
    options = DrillOptions(
        dataset,
        snapshot,
        pool,
        _bytes_option(scratch_file, "--scratch-file"),
        scratch_dir,
        against,
        _bytes_option(max_bytes, "--max-bytes"),
        ledger_path,
        threads,
    )
    store = _store(directories, recursive, endpoint_url)
    bars = _bars(quiet or no_progress or as_json)
    result = run_drill(store, options, max(0.0, wait), bars, _events())
    sys.stdout.write(drill_report.render(result, as_json, quiet))
    if certificate is not None:
        import json

        from zverify import certificate as certificates

        body = json.loads(drill_report.drill_json(result))
        certificates.write(certificate, "cold-drill", body, result.exit_code)
    return result.exit_code
