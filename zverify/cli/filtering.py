"""The filter options `compare` and `manifest` share, declared once.

Each is an Annotated type a command puts in its signature; selected() turns their values
into one zverify.filters.Filter (UsageError naming the bad pattern, file or line).  As in
rsync, the order of --include, --exclude and --exclude-from matters (the first rule that
matches decides), and click keeps each option's values apart: remember_order() has the
command's parser note the order in which the options came."""

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from zverify.filters import Filter

Exclude = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude",
        metavar="PATTERN",
        help="Leave out what matches (repeatable; rsync's rules: the first --include or "
        "--exclude that matches decides; * stops at /, ** crosses it, dir/*** is dir and "
        "all below, a leading / anchors at the root, a trailing / matches directories only).",
    ),
]
Include = Annotated[
    list[str] | None,
    typer.Option(
        "--include",
        metavar="PATTERN",
        help="Keep what matches, unless an earlier --exclude matched (repeatable).",
    ),
]
ExcludeFrom = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude-from",
        metavar="FILE",
        help="Rules, one per line, in place ('+ ' includes, '- ' excludes, ! clears; # and ; "
        "comment).",
    ),
]
FilesFrom = Annotated[
    str | None,
    typer.Option(
        "--files-from",
        metavar="FILE",
        help="Only these paths (relative to the roots) and what lies below them; a listed "
        "path in neither tree is exit 2.",
    ),
]
From0 = Annotated[
    bool,
    typer.Option(
        "--from0", help="--files-from and --exclude-from are NUL-separated (find -print0)."
    ),
]


def selected(
    exclude: list[str] | None,
    include: list[str] | None,
    exclude_from: list[str] | None,
    files_from: str | None,
    from0: bool,
) -> "Filter":
    from zverify.filters import build

    values = {"include": include or [], "exclude": exclude or []}
    values["exclude_from"] = exclude_from or []
    return build(_in_order(values), files_from, from0)


# The parameters' names as the last command line parsed gave them (a process parses one;
# the command runs where click's current context is no longer set).
_order: list[str] | None = None


def _in_order(values: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(option, value) pairs of the rule options, in command-line order."""
    given = [name for name, got in values.items() if got]
    order = _order
    if order is None:
        if len(given) > 1:  # never from the command line, where remember_order() runs
            from zverify.errors import UsageError

            raise UsageError("the order of --include, --exclude and --exclude-from is unknown")
        order = [name for name in given for _ in values[name]]
    pending = {name: iter(got) for name, got in values.items()}
    return [
        ("--" + name.replace("_", "-"), next(pending[name])) for name in order if name in pending
    ]


def remember_order(command: Any) -> None:
    """Have command's parser record the name of each option as it came, once per occurrence
    (click's parser returns that order; click then keeps only each option's own values)."""
    make_parser = command.make_parser

    def recording(ctx: Any) -> Any:
        parser = make_parser(ctx)
        parse: Callable[[list[str]], tuple[Any, list[str], list[Any]]] = parser.parse_args

        def parse_args(args: list[str]) -> tuple[Any, list[str], list[Any]]:
            global _order
            opts, rest, order = parse(args)
            _order = [param.name for param in order]
            return opts, rest, order

        parser.parse_args = parse_args
        return parser

    command.make_parser = recording
