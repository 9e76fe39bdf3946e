""" "Did you mean": the nearest valid name for a mistyped profile, kind or algorithm."""

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean 'full'?)' when a choice is close to word (case aside), else ''."""
    by_folded = {choice.casefold(): choice for choice in choices}
    if word.casefold() in by_folded:
        return f" (did you mean {by_folded[word.casefold()]!r}?)"
    close = difflib.get_close_matches(word.casefold(), list(by_folded), n=1, cutoff=0.6)
    return f" (did you mean {by_folded[close[0]]!r}?)" if close else ""
