"""The one verdict -> exit-code rule, in the diff/cmp convention that scripts already test for.

Every command computes two facts and lets `verdict()` decide: was everything verified, and
did anything differ?  Nothing that could not be read, listed, parsed or proven may ever come
out better than TROUBLE, so `unverified` wins over `different`.
"""

from collections.abc import Iterable

IDENTICAL = 0  # verified identical (or intact) under the chosen checks
DIFFERENT = 1  # differences found, and everything could be verified
TROUBLE = 2  # not verified: usage error, unreadable input, any error, changed while read
INTERRUPTED = 130  # Ctrl-C (SIGINT)
TERMINATED = 143  # SIGTERM (kill, systemd stop, a CI timeout): 128 + 15, as if killed
BROKEN_PIPE = 141  # stdout's reader went away (`| head`): 128 + SIGPIPE, as if killed

# Worst first: combining results keeps the worst of them.
_SEVERITY = (INTERRUPTED, TROUBLE, DIFFERENT, IDENTICAL)


def verdict(*, unverified: bool, different: bool) -> int:
    """The exit code of one result."""
    if unverified:
        return TROUBLE
    return DIFFERENT if different else IDENTICAL


def worst(codes: Iterable[int]) -> int:
    """The exit code of several results (e.g. several stream files): the worst one wins."""
    seen = set(codes)
    if INTERRUPTED not in seen and seen - set(_SEVERITY):
        return TROUBLE  # an unknown code is never better than TROUBLE
    return next((code for code in _SEVERITY if code in seen), IDENTICAL)
