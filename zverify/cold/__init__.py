"""`zverify cold`: ZFS send streams archived as files on cold storage.

operations (one function per command: lock, read, decide, act, and a result that knows its
exit code; cli/cold.py calls it, report/cold/ renders it).

Where the files are, the room store/: base (the few operations every command needs of its
storage), local (a directory or several), s3 with s3api and s3io (a bucket behind the same
interface; boto3 is imported in s3api alone), lock (who may use an archive at the same time:
flock(2) on lock files inside it), workdir (the work directories of parity and repair, and
fsync_dir).  Beside them: entries (a directory's entries, never trusted nor followed) and
names (the file-name convention and the suffixes of what lies beside the streams).

What is proven, the room proof/: check (read every file, rebuild every chain by GUID),
metadata and sample (check's cheaper depths for buckets: listings and HEADs, then random runs
of records read by range), ledger (the hash-chained record of every proof) and scrub
(proving again over time, within a budget, oldest proof first).  The formats they read
beside the streams: sidecar (the NAME.json format: written by send, read by check and
repair), contents (NAME.manifest: the files of the snapshot sent), parity (reading a
stream's PAR2 parity) and protect (making it).

What is done: plan and send (the next stream, written as NAME.partial and renamed once
proven), restore and thaw (the objects a bucket restore must bring back from an archive
tier first), prune (old chains, only with proof made at that moment), clean (the leftovers
of interrupted runs), repair (a damaged stream rebuilt from its parity).

The chain model itself is pure and lives in zverify.sendstream: rules (what `zfs receive`
accepts) and chain (what an archive restores, and the order its streams prove;
docs/design/cold.md).

No module here imports another inside a function: the imports form no loop, and each room
stands only on what is below it (tests/cold/test_layers.py).
"""
