"""`zverify cold`: ZFS send streams archived as files on cold storage.

operations (one function per command: lock, read, decide, act, and a result that knows its
exit code; cli/cold.py calls it, report/cold.py renders it).

Where the files are: store (the few operations every command needs of its storage: a local
directory), s3 with s3api and s3io (a bucket behind the same interface; boto3 is imported in
s3api alone), entries (a directory's entries, never trusted nor followed), names (the
file-name convention and the suffixes of what lies beside the streams), lock (who may use an
archive at the same time: flock(2) on lock files inside it), workdir (the work directories
of parity and repair, and fsync_dir).

What is proven: check (read every file, rebuild every chain by GUID), metadata and sample
(check's cheaper depths for buckets: listings and HEADs, then random runs of records read by
range), sidecar (the NAME.json format: written by send, read by check and repair), parity
(reading a stream's PAR2 parity) and protect (making it), ledger (the hash-chained record of
every proof) and scrub (proving again over time, within a budget, oldest proof first).

What is done: plan and send (the next stream, written as NAME.partial and renamed once
proven), restore and thaw (the objects a bucket restore must bring back from an archive
tier first), prune (old chains, only with proof made at that moment), clean (the leftovers
of interrupted runs), repair (a damaged stream rebuilt from its parity).

The chain model itself is pure and lives in zverify.sendstream: rules (what `zfs receive`
accepts) and chain (what an archive restores, and the order its streams prove;
docs/design/cold.md).

No module here imports another inside a function: the imports form no loop
(tests/cold/test_layers.py).
"""
