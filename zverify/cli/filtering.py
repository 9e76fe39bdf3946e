"""The filter options `compare` and `manifest` share, declared once.

Each is an Annotated type a command puts in its signature; selected() turns their values
into one zverify.filters.Filter (UsageError naming the bad pattern, file or line)."""

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from zverify.filters import Filter

Exclude = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude",
        metavar="PATTERN",
        help="Leave out what matches (repeatable; rsync rules: * stops at /, ** crosses it, "
        "a leading / anchors at the root, a trailing / matches directories only).",
    ),
]
Include = Annotated[
    list[str] | None,
    typer.Option(
        "--include", metavar="PATTERN", help="Keep what matches even if an --exclude matches."
    ),
]
ExcludeFrom = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude-from",
        metavar="FILE",
        help="Patterns, one per line ('+ ' includes, '- ' excludes; # and ; comment).",
    ),
]
FilesFrom = Annotated[
    str | None,
    typer.Option(
        "--files-from",
        metavar="FILE",
        help="Only these paths (relative to the roots) and what lies below them.",
    ),
]
From0 = Annotated[
    bool, typer.Option("--from0", help="--files-from is NUL-separated (find -print0).")
]


def selected(
    exclude: list[str] | None,
    include: list[str] | None,
    exclude_from: list[str] | None,
    files_from: str | None,
    from0: bool,
) -> "Filter":
    from zverify.filters import build

    return build(exclude or (), include or (), exclude_from or (), files_from, from0)
