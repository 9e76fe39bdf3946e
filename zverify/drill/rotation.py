"""`cold scrub --drill-pool POOL | --drill-scratch-file SIZE`: a scrub's run ends with one
drill, of the dataset whose last passing drill is oldest (one never drilled, or whose last
drill failed, first), so that repeated scrubs rotate through the datasets' drills as they
rotate through the files' proofs.  No drill follows a scrub that found a problem: it would
only fail on what the scrub already names."""

from dataclasses import dataclass, replace

from zverify import exitcodes
from zverify.cold.operations import Bars, no_bars
from zverify.cold.proof.ledger import Ledger
from zverify.cold.proof.scrub import ScrubReport
from zverify.cold.store import Store
from zverify.drill.drill import Drilled, DrillOptions, drill


@dataclass
class ScrubbedAndDrilled:
    scrub: ScrubReport
    drilled: Drilled | None
    skipped: str | None  # why no drill ran

    @property
    def exit_code(self) -> int:
        codes = [self.scrub.exit_code]
        if self.drilled is not None:
            codes.append(self.drilled.exit_code)
        return exitcodes.worst(codes)


def drill_next(
    store: Store,
    scrubbed: ScrubReport,
    place: DrillOptions,
    wait: float,
    bars: Bars = no_bars,
) -> ScrubbedAndDrilled:
    """place: where to receive (pool or scratch file) and --max-bytes; the dataset is
    chosen here, the ledger is the scrub's."""
    if scrubbed.exit_code != exitcodes.IDENTICAL:
        return ScrubbedAndDrilled(scrubbed, None, "no drill: the scrub found problems")
    due = most_overdue(scrubbed.drill_ages())
    if due is None:
        return ScrubbedAndDrilled(scrubbed, None, "no drill: the archive restores no dataset")
    options = replace(place, dataset=due, ledger=scrubbed.ledger.path)
    drilled = drill(store, options, wait, bars)
    # the scrub's view of the ledger, with the drill's line: its ages are reported
    scrubbed.ledger = Ledger.open(scrubbed.ledger.path, scrubbed.ledger.archive)
    return ScrubbedAndDrilled(scrubbed, drilled, None)


def most_overdue(ages: dict[str, float | None]) -> str | None:
    """A dataset without a passing drill (the last by name), else the one drilled longest ago."""
    if not ages:
        return None
    return max(ages, key=lambda d: (ages[d] is None, ages[d] or 0.0, d))
