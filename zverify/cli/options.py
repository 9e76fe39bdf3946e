"""Checks of options that several commands share, each turning bad input into a UsageError."""

from zverify.errors import UsageError
from zverify.hashing import Algorithm, parse_algorithm


def algorithm_option(name: str | None) -> Algorithm | None:
    """--hash NAME, or None when it was not given."""
    if name is None:
        return None
    try:
        return parse_algorithm(name)
    except ValueError as err:
        raise UsageError(str(err)) from None
