"""`zverify cold`: ZFS send streams archived as files on cold storage.

operations (one function per command: lock, read, decide, act, and a result that knows its
exit code; cli/cold.py calls it, report/cold.py renders it), store (where the files are),
names (the file-name convention and the suffixes of what lies beside the streams), entries (an
archive directory's entries, never trusted nor followed), check (read every file, rebuild
every chain by GUID), sidecar (the NAME.json format: written by send, read by check and
repair), parity (reading a stream's PAR2 parity) and protect (making it), plan and send (the
next stream, written as NAME.partial and renamed once proven), restore, prune (old chains,
only with proof made at that moment), clean (the leftovers of interrupted runs), repair
(a damaged stream rebuilt from its parity), workdir (the work directories of parity and
repair, and fsync_dir), lock (who may use an archive at the same time: flock(2) on lock
files inside it).  The chain model itself is pure and lives in zverify.sendstream: rules
(what `zfs receive` accepts) and chain (what an archive restores, and the order its streams
prove; docs/design/cold.md).

No module here imports another inside a function: the imports form no loop
(tests/cold/test_layers.py).
"""
