"""The send-stream tools moved to tools/streamgen.py (the fuzz targets and the benchmarks use
them too).  The tests under tests/cold/ still import them by this name, until they are moved."""

from tools.streamgen import *  # noqa: F403
