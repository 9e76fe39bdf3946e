"""`zverify compare SRC DST`."""

import sys
from typing import Annotated

import typer

from zverify.cli.filtering import Exclude, ExcludeFrom, FilesFrom, From0, Include
from zverify.compare.policy import PROFILES, ComparePolicy


def compare(
    src: Annotated[str, typer.Argument(help="The original tree, or a manifest of it.")],
    dst: Annotated[str, typer.Argument(help="The copy to verify, or a manifest of it.")],
    profile: Annotated[str, typer.Option(help=f"What counts: {', '.join(PROFILES)}.")] = "full",
    ignore: Annotated[
        str | None, typer.Option(help="Comma-separated kinds not to report, e.g. mtime,owner.")
    ] = None,
    mtime_window: Annotated[
        float,
        typer.Option(
            "--mtime-window",
            "--modify-window",
            help="Treat mtimes within this many seconds as equal (FAT, NAS).",
        ),
    ] = 0.0,
    quick: Annotated[
        bool,
        typer.Option(
            "--quick",
            help="Read no file data: equal size and mtime count as equal content (rsync's "
            "default check); the verdict says content was not read.",
        ),
    ] = False,
    one_way: Annotated[
        bool, typer.Option("--one-way", help="Entries only in DST are not differences.")
    ] = False,
    hash_name: Annotated[
        str | None,
        typer.Option(
            "--hash", help="xxh3-128 (default), blake3, sha256, sha512; a manifest's is used."
        ),
    ] = None,
    threads: Annotated[
        int | None, typer.Option(help="Hashing threads per tree (default: all cores).")
    ] = None,
    one_file_system: Annotated[
        bool, typer.Option("--one-file-system", "-x", help="Do not descend into other mounts.")
    ] = False,
    exclude: Exclude = None,
    include: Include = None,
    exclude_from: ExcludeFrom = None,
    files_from: FilesFrom = None,
    from0: From0 = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="Print only the verdict line (as diff -q); no progress bar."
        ),
    ] = False,
    no_progress: Annotated[
        bool, typer.Option("--no-progress", help="No progress bar (stderr on a terminal).")
    ] = False,
) -> int:
    """Compare SRC and DST: exit 0 identical, 1 different, 2 could not verify everything.

    Either side may be a manifest written by `zverify manifest` (a file, or - for stdin)."""
    # imported here, not at the top: `--help` and usage errors of this command never need them
    from zverify.cli.filtering import selected
    from zverify.cli.options import algorithm_option, check_threads
    from zverify.compare.trees import compare_trees
    from zverify.progress import entry_progress, wanted
    from zverify.report import json as json_report
    from zverify.report import text as text_report

    algorithm = algorithm_option(hash_name)
    check_threads(threads)
    if one_way:
        ignore = f"{ignore},extra" if ignore else "extra"
    policy = ComparePolicy.build(profile, ignore, mtime_window, quick)
    chosen = selected(exclude, include, exclude_from, files_from, from0)

    with entry_progress(wanted(quiet or no_progress or as_json), "comparing") as hook:
        result = compare_trees(
            src, dst, policy, algorithm, threads, one_file_system, progress=hook, filter=chosen
        )
    if as_json:
        sys.stdout.write(json_report.render_compare(result))
    else:
        sys.stdout.write(text_report.render_compare(result, verdict_only=quiet))
    return result.exit_code
