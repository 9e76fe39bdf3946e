"""zverify: prove a copy is complete and exact, and explain what differs.

The public library API: `compare_trees` (see zverify.compare) returns a
`CompareResult`; the CLI only parses options, calls it, and renders.
"""

from zverify.compare import CompareResult, compare_trees
from zverify.compare.policy import ComparePolicy

__version__ = "0.1.0"
__all__ = ["ComparePolicy", "CompareResult", "__version__", "compare_trees"]
