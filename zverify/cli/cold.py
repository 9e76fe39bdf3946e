"""`zverify cold check`: ZFS send streams archived as files (see zverify.cold)."""

import sys
from typing import Annotated

import typer

from zverify.errors import ArchiveError

app = typer.Typer(
    name="cold",
    help="Send-stream archives on cold storage: check them (more to come: send, restore, prune).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)


@app.command("check")
def check(
    directory: Annotated[str, typer.Argument(help="The archive directory.")],
    dataset: Annotated[
        str | None, typer.Option("--dataset", help="Only this dataset (pool/set).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> int:
    """Read every stream completely, rebuild the chains by GUID: exit 0 every file intact and
    every incremental reachable from a full, 1 anything else found, 2 could not read."""
    from zverify.cold.check import check_archive
    from zverify.progress import byte_progress, wanted
    from zverify.report import cold as cold_report

    with byte_progress(wanted(quiet or as_json), "checking", None) as hook:
        try:
            report = check_archive(directory, dataset, lambda _name, n: hook(n))
        except OSError as err:
            raise ArchiveError(f"cannot read archive {directory!r}: {err.strerror}") from None
    sys.stdout.write((cold_report.check_json if as_json else cold_report.check_text)(report))
    return report.exit_code
