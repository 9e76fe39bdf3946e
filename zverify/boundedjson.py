"""json.loads for text zverify did not write itself (sidecars, manifest lines), where nesting
too deep for the parser is bad input like any other, not a crash.

Python's JSON parser recurses once per `[` or `{` and raises RecursionError at the
interpreter's recursion limit, which is no ValueError and so escaped the "cannot be read"
handling of every caller (a sidecar of `[[[[...` crashed every cold command).  Here it is a
ValueError.  Nothing is scanned ahead of the parser: manifest lines are read by the million,
and the parser's own limit already bounds the work.
"""

import json
from typing import Any


class TooDeep(ValueError):
    """The JSON nests deeper than the parser can follow."""


def loads(data: bytes | str) -> Any:
    """json.loads(data), or ValueError (TooDeep when it nests too deeply to parse)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise TooDeep("JSON nested too deeply") from None
