"""What proves an archive: check (every file read whole, chains rebuilt from the GUIDs),
metadata (`check --depth metadata` of a bucket: listings and sidecars only), sample (a share
of the bytes, by range), scrub (the oldest proofs made again, within a budget) and ledger (the
hash-chained record of every proof, which scrub reads to know what is oldest)."""
