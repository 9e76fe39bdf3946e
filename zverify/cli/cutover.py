"""`zverify cutover SRC DST`: is the replica ready for the old pool to be destroyed?"""

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from zverify.errors import UsageError

if TYPE_CHECKING:
    from zverify.cold.store import Store


def cutover(
    src: Annotated[str, typer.Argument(help="The source dataset (pool/set, or a pool).")],
    dst: Annotated[str, typer.Argument(help="Its replica.")],
    recursive: Annotated[
        bool, typer.Option("--recursive", "-r", help="Every descendant too, paired by path.")
    ] = False,
    no_recursive: Annotated[
        bool,
        typer.Option(
            "--no-recursive",
            help="SRC alone: READY may then leave its descendants unchecked (without -r or "
            "this, a SRC with descendants is NOT READY).",
        ),
    ] = False,
    content: Annotated[
        bool, typer.Option("--content", help="Read the latest common snapshot on both sides.")
    ] = False,
    snapshots: Annotated[
        str, typer.Option(help="latest: the newest must be common; all: every one.")
    ] = "latest",
    expect: Annotated[
        list[str] | None,
        typer.Option(metavar="PROP=VALUE", help="An intended value on the replica (repeatable)."),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="A dataset only on the replica fails too.")
    ] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="List what was written on the source (zfs diff).")
    ] = False,
    threads: Annotated[
        int | None, typer.Option(help="Hashing threads per tree for --content.")
    ] = None,
    cold: Annotated[
        list[str] | None,
        typer.Option(
            "--cold",
            metavar="PLACE",
            help="A cold archive (directory or s3:// URL, repeatable; the directories form "
            "one archive): the base of its next incremental must be on DST.",
        ),
    ] = None,
    endpoint_url: Annotated[
        str | None, typer.Option(help="The S3 endpoint of an s3:// --cold archive.")
    ] = None,
    pool_state: Annotated[
        bool,
        typer.Option(
            "--pool-state",
            help="DST's pool must show a scrub that started after the last receive into DST "
            "and found 0 errors (else unverified-copy: a warning, failing with --strict).",
        ),
    ] = False,
    live: Annotated[
        bool,
        typer.Option(
            "--live",
            help="DST is already in service (the pools were swapped): its writes and "
            "snapshots after the final sync are warnings; what SRC has and DST lacks still "
            "fails.",
        ),
    ] = False,
    certificate: Annotated[
        str | None,
        typer.Option(
            "--certificate",
            metavar="FILE",
            help="Also write a certificate of this check (`zverify certificate verify`).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> int:
    """Check a replica before the cutover: exit 0 READY, 1 NOT READY (every reason listed),
    2 could not check.  Read-only.

    Without -r, a SRC with descendant datasets is NOT READY (they were not checked) unless
    --no-recursive says SRC alone is meant."""
    from zverify.cutover.gather import CutoverOptions, check_cutover
    from zverify.progress import compare_progress, wanted
    from zverify.report import cutover as report

    if recursive and no_recursive:
        raise UsageError("-r and --no-recursive contradict each other: give one")
    if snapshots not in ("latest", "all"):
        raise UsageError(f"--snapshots must be latest or all, not {snapshots!r}")
    options = CutoverOptions(
        recursive=recursive,
        alone=no_recursive,
        content=content,
        strict=strict,
        all_snapshots=snapshots == "all",
        explain=explain,
        expect=_expectations(expect or []),
        threads=threads,
        cold=_archives(cold or [], endpoint_url),
        pool_state=pool_state,
        live=live,
    )
    with compare_progress(wanted(quiet or as_json) and content) as hook:
        result = check_cutover(src, dst, options, hook)
    sys.stdout.write((report.render_json if as_json else report.render_text)(result))
    if certificate is not None:
        import json

        from zverify import certificate as certificates

        body = json.loads(report.render_json(result))
        certificates.write(certificate, "cutover", body, result.exit_code)
    return result.exit_code


def _archives(places: list[str], endpoint_url: str | None) -> tuple[tuple[str, "Store"], ...]:
    """The archives of --cold: the directories together form one archive (as `cold check
    DIR...` reads them: a chain may span rotating disks); each s3:// URL is one archive.
    boto3 is loaded only for a URL."""
    from zverify.cold.store import LocalStore

    directories = [p for p in places if not p.startswith("s3://")]
    stores: list[tuple[str, Store]] = []
    if directories:
        stores.append((", ".join(directories), LocalStore(directories, False)))
    for url in (p for p in places if p.startswith("s3://")):
        from zverify.cold.store.s3 import S3Store

        stores.append((url, S3Store(url, endpoint_url)))
    return tuple(stores)


def _expectations(pairs: list[str]) -> dict[str, str]:
    expect = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--expect takes PROP=VALUE, not {pair!r}")
        expect[name] = value
    return expect
