"""`zverify compare` end to end: the orchestrator over the pure engine in zverify.compare.

compare.py checks the roots, opens both sides (open.py: a live tree, one that MPI ranks
walk, or a manifest read by zverify.manifest), settles the digest algorithm, the filter
and what a manifest cannot tell, then picks the C join, the Python march or the MPI
coordinator and adds what only the sides know.  It sits above every source it chooses
between, so the engine below imports none of them.

Nothing is imported here, so `import zverify.trees.open` stays cheap.
"""
