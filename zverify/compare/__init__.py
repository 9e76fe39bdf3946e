"""`zverify compare`'s engine: engine.py (pure, any two entry streams), joined.py (the C
join of two walks), sides.py (what a side is), result.py (CompareResult), and the pieces
they use: march (merge-join), policy (profiles), diffs (per pair), hardlinks (partitions),
sizes (du reconciliation), moves (--detect-moves).  zverify.trees, above it, opens the
sides and drives it; nothing here imports manifest/, mpi/ or the UI.

Nothing is imported here, so `import zverify.compare.policy` stays cheap.
"""
