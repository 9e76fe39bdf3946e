"""CutoverResult: what `zverify cutover` found, for the verdict rule and the renderers."""

from dataclasses import dataclass, field

from zverify.cutover.findings import Finding, Severity, exit_code
from zverify.cutover.snapshots import Common


@dataclass
class DatasetResult:
    """One source dataset, its replica (None: missing) and what was found about them."""

    src: str
    dst: str | None
    type: str
    latest_common: Common | None = None
    behind: int = 0
    src_written: int | None = None
    dst_written: int | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def drifted(self) -> list[str]:
        return sorted(
            {
                str(f.details.get("property"))
                for f in self.findings
                if f.kind == "property-drift" and f.severity is Severity.FAIL
            }
        )


@dataclass
class CutoverResult:
    src_root: str
    dst_root: str
    recursive: bool
    content: bool
    datasets: list[DatasetResult]
    other: list[Finding]  # about no single source dataset (extra datasets, the re-check)
    # SRC's descendants that were not checked (no -r); empty with -r
    unchecked: list[str] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [f for d in self.datasets for f in d.findings] + self.other

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings)

    @property
    def ready(self) -> bool:
        return self.exit_code == 0
