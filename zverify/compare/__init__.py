"""`zverify compare`: engine.py (pure, any two entry streams), trees.py (two live trees),
result.py (CompareResult), and the pieces they use: march (merge-join), policy (profiles),
diffs (per pair), hardlinks (partitions), sizes (du reconciliation).

Nothing is imported here, so `import zverify.compare.policy` stays cheap.
"""
