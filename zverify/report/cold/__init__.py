"""Rendering of every cold command's result (zverify.cold.operations): text for people, whose
last line is the verdict (-q prints only that line), and JSON (GUIDs as decimal strings)
described by the schemas cold-* (`zverify schema cold-check`...).  One module per kind of
result: check (cold check, its depths, and the warnings send and restore print), scrub (with
its node_exporter textfile), changes (the commands that write or delete: send, restore,
prune, clean, lock, parity, repair), and documents (the pieces they share).  render() is the
one way a cold command's result is shown.

An archive directory may hold any name: in text, every name goes through pathnames'
for_terminal (bytes that are not UTF-8 as \\xHH, a newline as \\n) and nothing else in a
line may break it, so that one entry is one line; in JSON a file name that is not UTF-8 is
escaped the same way and flagged "file_escaped" (docs/schema/README.md).
"""

from collections.abc import Callable
from typing import Any

from zverify.cold.operations import (
    Cleaned,
    LockedChains,
    Protected,
    Pruned,
    Repaired,
    Restored,
    Result,
    Sent,
)  # fmt: skip
from zverify.cold.proof.check import ArchiveReport
from zverify.cold.proof.scrub import ScrubReport
from zverify.report.cold import changes, check, scrub
from zverify.report.cold.documents import verdict_only

_RENDER: dict[type, tuple[Callable[[Any], str], Callable[[Any], str]]] = {
    ArchiveReport: (check.check_text, check.check_json),
    ScrubReport: (scrub.text, scrub.json_doc),
    Sent: (changes.send_text, changes.send_json),
    Restored: (changes.restore_text, changes.restore_json),
    Pruned: (changes.prune_text, changes.prune_json),
    Cleaned: (changes.clean_text, changes.clean_json),
    Protected: (changes.parity_text, changes.parity_json),
    Repaired: (changes.repair_text, changes.repair_json),
    LockedChains: (changes.lock_text, changes.lock_json),
}


def render(result: Result, as_json: bool, quiet: bool, verbose: bool = False) -> str:
    """One cold command's result as JSON, as text, or (quiet) as its verdict line.  verbose
    (check and scrub): a line per snapshot and file that the text otherwise counts."""
    text, doc = _RENDER[type(result)]
    if as_json:
        return doc(result)
    shown = text(result, verbose=True) if verbose else text(result)  # type: ignore[call-arg]
    return verdict_only(shown) if quiet else shown
