"""`zverify manifest TREE -o FILE`."""

import os
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from zverify import exitcodes
from zverify.cli.filtering import Exclude, ExcludeFrom, FilesFrom, From0, Include
from zverify.errors import UsageError
from zverify.manifest import FORMATS, STDIO

if TYPE_CHECKING:
    from zverify.hashing import Algorithm


def manifest(
    tree: Annotated[str, typer.Argument(help="The tree to record.")],
    output: Annotated[
        str, typer.Option("--output", "-o", help="Manifest file (.zst/.gz compress), - = stdout.")
    ],
    fmt: Annotated[
        str, typer.Option("--format", help=f"{', '.join(FORMATS)}; all but native lose attributes.")
    ] = "native",
    hash_name: Annotated[
        str | None, typer.Option("--hash", help="xxh3-128 (default) or blake3.")
    ] = None,
    threads: Annotated[
        int | None, typer.Option(help="Hashing threads (default: all cores).")
    ] = None,
    one_file_system: Annotated[
        bool, typer.Option("--one-file-system", "-x", help="Do not descend into other mounts.")
    ] = False,
    exclude: Exclude = None,
    include: Include = None,
    exclude_from: ExcludeFrom = None,
    files_from: FilesFrom = None,
    from0: From0 = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bar.")] = False,
) -> int:
    """Record TREE in a manifest, to compare it later or elsewhere with `zverify compare`.

    Exit 0 when every entry was read and written, 2 when any could not be read (they are
    recorded as errors, and any comparison against them will exit 2 too) or a checkfile
    line cannot be checked by its tool (b3sum: names not UTF-8)."""
    # imported here, not at the top: `--help` and usage errors of this command never need them
    from zverify.cli.filtering import selected
    from zverify.fsinfo import estimate_tree
    from zverify.manifest.files import atomic_output
    from zverify.manifest.write import write_manifest
    from zverify.pathnames import shown_paths
    from zverify.progress import tree_progress, wanted
    from zverify.walk import WalkOptions, check_threads, default_threads

    algorithm = _algorithm(fmt, hash_name)
    check_threads(threads)
    if from0 and not (files_from or exclude_from):
        raise UsageError("--from0 applies to --files-from and --exclude-from: neither was given")
    if output != STDIO and os.path.isdir(output):
        raise UsageError(f"--output {output!r} is a directory")
    options = WalkOptions(
        algorithm=algorithm,
        threads=threads or default_threads(),
        xattrs=True,
        one_file_system=one_file_system,
        filter=selected(exclude, include, exclude_from, files_from, from0),
    )
    show = wanted(quiet or no_progress) and output != STDIO
    estimate = estimate_tree(tree) if show else None  # a total and an ETA at a filesystem root
    with tree_progress(show, "recording", estimate) as hook, atomic_output(output) as out:
        summary = write_manifest(tree, out, options, progress=hook, fmt=fmt)
    where = "stdout" if output == STDIO else repr(output)
    print(f"zverify: {summary.entries:,} entries of {tree!r} recorded in {where}", file=sys.stderr)
    if options.filter.active:
        print(
            f"zverify: {summary.excluded:,} entries left out by the filters, which the "
            "manifest records (compare applies them to the other side)",
            file=sys.stderr,
        )
    if summary.dropped:
        print(f"zverify: --format {fmt} cannot express {summary.dropped}", file=sys.stderr)
    if summary.uncheckable:
        why = ", ".join(f"{n:,} {reason}" for reason, n in summary.uncheckable_why.items())
        print(
            f"zverify: {len(summary.uncheckable):,} file names `{fmt} -c` cannot check ({why}); "
            f"their lines make it fail: {shown_paths(summary.uncheckable)}",
            file=sys.stderr,
        )
    if summary.unreadable:
        print(
            f"zverify: {len(summary.unreadable):,} entries could not be read and are recorded "
            f"as errors: {shown_paths(summary.unreadable)}",
            file=sys.stderr,
        )
    unseen = options.filter.unseen()
    if unseen:  # as compare: a list naming what is not there recorded less than it says
        print(
            f"zverify: --files-from {files_from!r}: {len(unseen):,} listed path(s) not in "
            f"the tree: {shown_paths(unseen, quoted=True)}",
            file=sys.stderr,
        )
    if summary.unreadable or summary.uncheckable or unseen:
        return exitcodes.TROUBLE
    return exitcodes.IDENTICAL


def _algorithm(fmt: str, hash_name: str | None) -> "Algorithm":
    from zverify.cli.options import algorithm_option
    from zverify.hashing import Algorithm
    from zverify.manifest.write import format_algorithm

    if fmt not in FORMATS:
        raise UsageError(f"unknown --format {fmt!r} (choose from {', '.join(FORMATS)})")
    asked = algorithm_option(hash_name)
    needed = format_algorithm(fmt)
    if needed is not None and asked not in (None, needed):
        raise UsageError(f"--format {fmt} holds {needed} digests, not {asked}")
    if needed is None and asked not in (None, Algorithm.XXH3_128, Algorithm.BLAKE3):
        raise UsageError("native manifests hold xxh3-128 or blake3 digests")
    return needed or asked or Algorithm.XXH3_128
