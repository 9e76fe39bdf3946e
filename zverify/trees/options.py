"""CompareOptions: what `zverify compare` was asked to compare and how, checked once.

The run's collaborators (a progress hook, a difference sink, an MPI session) are not
options: they say where results go, not what is compared, and compare_trees takes them
beside the options, as check_cutover takes its progress hook beside CutoverOptions.
"""

from dataclasses import dataclass, field

from zverify.compare.policy import ComparePolicy
from zverify.errors import UsageError
from zverify.filters import Filter
from zverify.hashing import Algorithm
from zverify.walk import check_threads


@dataclass(frozen=True)
class CompareOptions:
    policy: ComparePolicy = field(default_factory=ComparePolicy)
    algorithm: Algorithm | None = None  # --hash; None: a manifest's, else XXH3-128
    threads: int | None = None  # hashing threads per tree; None: all cores (up to 64)
    one_file_system: bool = False  # -x: the walks do not cross mounts
    filter: Filter = field(default_factory=Filter)
    c_join: bool = True  # False: two live trees are paired in Python (tests: the reference)

    def __post_init__(self) -> None:
        """Refuse here what a library caller could pass and the walk would only misread
        (the CLI checks its flags first, so its messages come in its own order)."""
        check_threads(self.threads)
        if self.algorithm is not None and not isinstance(self.algorithm, Algorithm):
            raise UsageError(f"--hash {self.algorithm!r} is not an algorithm zverify hashes")
