"""Developer tools run from a checkout (`python -m tools.NAME`), not part of the zverify package.

They serve the tests and the benchmarks, which import them; nothing here imports `tests`.
"""
