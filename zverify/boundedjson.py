"""json.loads for text zverify did not write itself (sidecars, manifest lines): nesting is
bounded before the parser sees it.

Python's JSON parser recurses once per `[` or `{`, so a file of `[[[[…` raises
RecursionError, which is no ValueError and escapes the "cannot be read" handling of every
caller.  Nothing zverify reads nests more than a few levels deep, so anything deeper is
refused up front as malformed: a ValueError like any other bad JSON.
"""

import json
import re
from typing import Any

MAX_DEPTH = 32

# A string (whose brackets do not nest) or one bracket.  An unterminated string runs to the
# end, so that no text is scanned twice; json.loads refuses it before reaching its brackets.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\Z)|[\[\]{}]', re.DOTALL)


class TooDeep(ValueError):
    """The JSON nests deeper than MAX_DEPTH."""


def loads(data: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads(data), or ValueError (TooDeep when it nests deeper than max_depth)."""
    # Decoded as json.loads would (UTF-8, -16 or -32), so that brackets are found as
    # characters, not bytes.  UnicodeDecodeError is a ValueError.
    text = (
        data if isinstance(data, str) else data.decode(json.detect_encoding(data), "surrogatepass")
    )
    if text.count("[") + text.count("{") > max_depth:  # else it cannot nest that deep
        _check_depth(text, max_depth)
    try:
        return json.loads(text)
    except RecursionError:  # only if the caller's own stack is nearly full
        raise TooDeep("JSON nested too deeply for the stack") from None


def _check_depth(text: str, max_depth: int) -> None:
    depth = 0
    for token in _TOKEN.finditer(text):
        first = token.group()[0]
        if first in "[{":
            depth += 1
            if depth > max_depth:
                raise TooDeep(f"JSON nested too deeply (over {max_depth} levels)")
        elif first != '"' and depth:  # a `]` or `}`; one too many is json.loads's to refuse
            depth -= 1
