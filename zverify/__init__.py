"""zverify: prove a copy is complete and exact, and explain what differs.

The public library API: `compare_trees` (zverify.trees.compare) returns a `CompareResult`;
`compare_entries` (zverify.compare.engine) compares any two entry streams.  Names are
loaded on first use, so importing one module of the package does not load all of them.
"""

from importlib import import_module
from typing import Any

__version__ = "0.1.0"
__all__ = ["ComparePolicy", "CompareResult", "__version__", "compare_entries", "compare_trees"]

_LAZY = {
    "ComparePolicy": "zverify.compare.policy",
    "CompareResult": "zverify.compare.result",
    "compare_entries": "zverify.compare.engine",
    "compare_trees": "zverify.trees.compare",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'zverify' has no attribute {name!r}")
