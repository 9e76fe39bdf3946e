"""`zverify schema [NAME]`: print an installed JSON Schema, or list their names."""

import sys
from typing import Annotated

import typer


def schema(
    name: Annotated[
        str | None,
        typer.Argument(help="The schema to print (without NAME: list the names, one a line)."),
    ] = None,
) -> int:
    """Print the JSON Schema of the --json documents NAME (compare, cold-check...); without
    NAME, list the names."""
    from zverify import schemas

    if name is None:
        sys.stdout.write("".join(f"{known}\n" for known in schemas.names()))
    else:
        sys.stdout.write(schemas.text(name))
    return 0
