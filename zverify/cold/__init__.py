"""`zverify cold`: ZFS send streams archived as files on cold storage.

names (the file-name convention), entries (an archive directory's entries, never trusted nor
followed), check (read every file, rebuild every chain by GUID), plan and send (the next
stream, written as NAME.partial and renamed once proven), restore, prune (old chains, only
with proof made at that moment), clean (the leftovers of interrupted sends), lock (who may use
an archive at the same time: flock(2) on lock files inside it).  The chain model itself is
pure and lives in zverify.sendstream: rules (what `zfs receive` accepts) and chain (what an
archive restores, and the order its streams prove; docs/design/cold.md).
"""
