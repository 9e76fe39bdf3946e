"""`zverify manifest TREE -o FILE`."""

import os
import sys
from typing import Annotated

import typer

from zverify import exitcodes
from zverify.errors import UsageError
from zverify.hashing import parse_algorithm
from zverify.manifest.files import STDIO, atomic_output
from zverify.manifest.write import write_manifest
from zverify.pathnames import for_terminal
from zverify.progress import entry_progress, wanted
from zverify.walk import WalkOptions, default_threads

SHOWN_UNREADABLE = 10


def manifest(
    tree: Annotated[str, typer.Argument(help="The tree to record.")],
    output: Annotated[
        str, typer.Option("--output", "-o", help="Manifest file (.zst/.gz compress), - = stdout.")
    ],
    hash_name: Annotated[str, typer.Option("--hash", help="xxh3-128 (default) or blake3.")] = (
        "xxh3-128"
    ),
    threads: Annotated[
        int | None, typer.Option(help="Hashing threads (default: all cores).")
    ] = None,
    one_file_system: Annotated[
        bool, typer.Option("--one-file-system", "-x", help="Do not descend into other mounts.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> int:
    """Record TREE in a manifest, to compare it later or elsewhere with `zverify compare`.

    Exit 0 when every entry was read, 2 when any could not be (they are recorded as
    errors, and any comparison against them will exit 2 too)."""
    try:
        algorithm = parse_algorithm(hash_name)
    except ValueError as err:
        raise UsageError(str(err)) from None
    if threads is not None and not 1 <= threads <= 256:
        raise UsageError("--threads must be between 1 and 256")
    if output != STDIO and os.path.isdir(output):
        raise UsageError(f"--output {output!r} is a directory")
    options = WalkOptions(
        algorithm=algorithm,
        threads=threads or default_threads(),
        xattrs=True,
        one_file_system=one_file_system,
    )
    show = wanted(quiet) and output != STDIO
    with entry_progress(show, "recording") as hook, atomic_output(output) as out:
        summary = write_manifest(tree, out, options, progress=hook)
    where = "stdout" if output == STDIO else repr(output)
    print(f"zverify: {summary.entries:,} entries of {tree!r} recorded in {where}", file=sys.stderr)
    if summary.unreadable:
        shown = ", ".join(for_terminal(p) or "." for p in summary.unreadable[:SHOWN_UNREADABLE])
        more = len(summary.unreadable) - SHOWN_UNREADABLE
        tail = f" and {more:,} more" if more > 0 else ""
        print(
            f"zverify: {len(summary.unreadable):,} entries could not be read and are recorded "
            f"as errors: {shown}{tail}",
            file=sys.stderr,
        )
        return exitcodes.TROUBLE
    return exitcodes.IDENTICAL
