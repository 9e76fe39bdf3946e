"""The `zverify` command: the root typer app and the one top-level error handler.

Commands live one per module (cli/compare.py, ...); each parses options,
calls one library function and renders its result.  Here ZverifyError
becomes one line on stderr and its exit code, Ctrl-C becomes 130, and
usage errors exit 2.
"""

import sys

import click
import typer

from zverify import exitcodes
from zverify.cli import compare
from zverify.cli.stream import app as stream_app
from zverify.errors import ZverifyError

app = typer.Typer(
    name="zverify",
    help="Prove a copy is complete and exact, and explain what differs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)
app.command(name="compare")(compare.compare)
app.add_typer(stream_app, name="stream")


@app.callback()
def _root() -> None:
    """zverify: copy verification for people who move data for a living."""


def main(argv: list[str] | None = None) -> None:
    sys.exit(run(argv))


def run(argv: list[str] | None = None) -> int:
    try:
        code = app(args=argv, prog_name="zverify", standalone_mode=False)
    except ZverifyError as err:
        print(f"zverify: {err}", file=sys.stderr)
        return err.exit_code
    except click.exceptions.Abort:
        print("zverify: interrupted", file=sys.stderr)
        return exitcodes.INTERRUPTED
    except KeyboardInterrupt:
        print("zverify: interrupted", file=sys.stderr)
        return exitcodes.INTERRUPTED
    except click.ClickException as err:
        err.show(file=sys.stderr)
        return exitcodes.TROUBLE
    return code if isinstance(code, int) else exitcodes.IDENTICAL
