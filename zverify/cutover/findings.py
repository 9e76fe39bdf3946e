"""Findings of a cutover check: a named kind, how much it weighs, and the dataset it is about."""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from zverify import exitcodes


class Severity(StrEnum):
    FAIL = "fail"  # the replica is not ready: exit 1
    UNVERIFIED = "unverified"  # something could not be checked: exit 2, whatever else
    WARNING = "warning"  # worth knowing before the cutover; does not change the verdict
    NOTE = "note"


@dataclass(frozen=True)
class Finding:
    kind: str  # e.g. "source-written", "property-drift"
    severity: Severity
    dataset: str  # the dataset it concerns (the source's name, or the destination's if extra)
    message: str
    details: Mapping[str, object] = field(default_factory=dict)


def listed(texts: Sequence[str], limit: int, sep: str = "; ", total: int | None = None) -> str:
    """The first limit texts joined, and how many more there are (of total, when texts holds
    only the first ones): one finding's message stays one readable line however many
    snapshots, paths or entries it is about."""
    shown = texts[:limit]
    more = (len(texts) if total is None else total) - len(shown)
    return sep.join(shown) + (f" and {more} more" if more > 0 else "")


def exit_code(findings: Iterable[Finding]) -> int:
    """0 ready, 1 not ready, 2 could not check: through the one verdict rule."""
    severities = {f.severity for f in findings}
    return exitcodes.verdict(
        unverified=Severity.UNVERIFIED in severities, different=Severity.FAIL in severities
    )
