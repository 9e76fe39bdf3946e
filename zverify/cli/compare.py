"""`zverify compare SRC DST`."""

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from zverify.cli.filtering import Exclude, ExcludeFrom, FilesFrom, Include
from zverify.compare.policy import PROFILES, ComparePolicy

if TYPE_CHECKING:
    from zverify.mpi.session import Session
    from zverify.report.compare_json import Write
    from zverify.report.lists import ListFiles
    from zverify.report.outputs import Rendering


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
    detect_moves: Annotated[
        bool,
        typer.Option(
            "--detect-moves",
            help="Report a file only in SRC and one only in DST with the same size and "
            "digest as one 'moved' (not missing + extra); ties paired in path order, empty "
            "files and files in a missing/extra directory never. Still a difference (exit 1): "
            "the trees are not the same. Needs content read (not with --quick).",
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
    from0: Annotated[
        bool,
        typer.Option(
            "--from0",
            help="--files-from and --exclude-from are read, --write-lists written, NUL-separated.",
        ),
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print one JSON document (differences streamed first)."),
    ] = False,
    as_jsonl: Annotated[
        bool,
        typer.Option(
            "--jsonl", help="Print JSON Lines: a header, one line per difference, a summary."
        ),
    ] = False,
    write_lists: Annotated[
        str | None,
        typer.Option(
            "--write-lists",
            metavar="DIR",
            help="Also write the paths of each category to DIR/missing, extra, differ, "
            "differ-dirs (directories whose own attributes differ, not their subtree), error, "
            "and with --detect-moves moved (SRC path, then DST path) (one per line, "
            "NUL-terminated with --from0). To repair the copy: rsync -aHAX -r -I "
            "--files-from=DIR/missing (then DIR/differ) SRC/ DST/, then rsync -aHAX "
            "--files-from=DIR/differ-dirs SRC/ DST/ (no -r).",
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Every difference on its own line, written as it is found (default: the "
            "answer first, each difference that puts data at risk on a line, the others "
            "folded into a line per kind).",
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="Print only the verdict line (as diff -q); no progress bar."
        ),
    ] = False,
    no_progress: Annotated[
        bool, typer.Option("--no-progress", help="No progress bar (stderr on a terminal).")
    ] = False,
    mpi: Annotated[
        bool,
        typer.Option(
            "--mpi",
            help="Run as one rank of an MPI job (mpirun -n N zverify compare --mpi ...): the "
            "ranks share the walk, rank 0 prints the same result as a single-node run. "
            "Needs zverify[mpi].",
        ),
    ] = False,
) -> int:
    """Compare SRC and DST: exit 0 identical, 1 different, 2 could not verify everything.

    Either side may be a list instead of a tree (a file, or - for stdin), recognised by its
    content: a manifest written by `zverify manifest`, an mtree spec, a hashdeep list, or a
    checkfile of sha256sum, sha512sum, sha1sum, md5sum, b3sum or xxh128sum (its names are
    relative to the other side's root); or a BagIt bag's directory.  What a list does not
    record is refused per profile."""
    # imported here, not at the top: `--help` and usage errors of this command never need them
    from zverify.cli.filtering import selected
    from zverify.cli.options import algorithm_option
    from zverify.compare.sides import is_manifest_path
    from zverify.errors import UsageError
    from zverify.fsinfo import estimate_tree
    from zverify.progress import compare_progress, wanted
    from zverify.report.outputs import Outputs, stdout_writer
    from zverify.trees.compare import compare_trees
    from zverify.trees.options import CompareOptions
    from zverify.walk import check_threads

    if not mpi:
        _no_mpi_job()
    ranks = _join_mpi_job() if mpi else None
    if ranks is not None and ranks.rank != 0:
        from zverify.mpi.worker import serve

        return serve(ranks)  # rank 0 checks the options and reports; this one walks
    algorithm = algorithm_option(hash_name)
    check_threads(threads)
    if one_way:
        ignore = f"{ignore},extra" if ignore else "extra"
    policy = ComparePolicy.build(profile, ignore, mtime_window, quick, detect_moves)
    if as_json and as_jsonl:
        raise UsageError("--json and --jsonl: choose one")
    if from0 and not (files_from or exclude_from or write_lists):
        raise UsageError(
            "--from0 applies to --files-from, --exclude-from and --write-lists: none was given"
        )
    chosen = selected(exclude, include, exclude_from, files_from, from0)
    options = CompareOptions(policy, algorithm, threads, one_file_system, chosen)
    machine = as_json or as_jsonl
    bar = wanted(quiet or no_progress or machine or mpi)  # ranks count only their share
    rendering = _rendering(as_json, as_jsonl, quiet, verbose, src, dst, stdout_writer(bar))
    outputs = Outputs(rendering, _list_files(write_lists, from0, detect_moves))

    estimate = None if not bar or is_manifest_path(src) else estimate_tree(src)
    with compare_progress(bar, estimate, policy.reads_content) as hook:
        try:
            result = compare_trees(
                src,
                dst,
                options,
                progress=hook,
                sink=outputs.difference,
                ranks=ranks if ranks is not None and ranks.size > 1 else None,
            )
        except BaseException as err:
            outputs.abort(str(err) or type(err).__name__)
            raise
    outputs.finish(result)
    if result.unlisted:
        _say_not_found(result.filter.listed_from, result.unlisted)
    return result.exit_code


def _list_files(directory: str | None, from0: bool, detect_moves: bool) -> "ListFiles | None":
    if not directory:
        return None
    from zverify.report.lists import ListFiles  # only with --write-lists

    return ListFiles(directory, from0, detect_moves)


def _say_not_found(files_from: str | None, paths: list[bytes]) -> None:
    """One line on stderr, whatever stdout holds: the list named what is not there."""
    import sys

    from zverify.pathnames import shown_paths

    print(
        f"zverify: --files-from {files_from!r}: {len(paths):,} listed path(s) in neither "
        f"tree: {shown_paths(paths, quoted=True)}",
        file=sys.stderr,
    )


def _join_mpi_job() -> "Session":
    from zverify.mpi.session import start

    return start()


def _no_mpi_job() -> None:
    """'--mpi' was somewhere on the command line (the value of another option, a path after
    --), so the CLI held SIGTERM and SIGINT for an MPI start that will not come: give them
    back, and deliver one that came meanwhile."""
    session = sys.modules.get("zverify.mpi.session")
    if session is not None:
        session.resume_signals()


def _rendering(
    as_json: bool, as_jsonl: bool, quiet: bool, verbose: bool, src: str, dst: str, write: "Write"
) -> "Rendering":
    # each imported only when chosen: the JSON renderers load json, which text never needs
    if as_json:
        from zverify.report.compare_json import JsonStream

        return JsonStream(write)
    if as_jsonl:
        from zverify.report.compare_json import JsonLinesStream

        return JsonLinesStream(write, src, dst)
    from zverify.report.compare_text import TextStream

    return TextStream(write, verdict_only=quiet, every_line=verbose)
