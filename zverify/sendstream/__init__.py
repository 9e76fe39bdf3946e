"""Offline send-stream code: no ZFS module, pool or `zfs` command is needed.

format (record layouts), nvlist (XDR/native decoding), token (resume tokens),
validate (a whole stream -> StreamReport: its data in report, its messages in
messages, the package rules in package), rules (what `zfs receive` accepts of a substream)
and chain (what an archive of stream files restores, and in which order); compressed
(zstd, gzip, xz, lz4 and bzip2 streams recognised by their first bytes and decompressed on
the way to the scanner).  Live ZFS is zverify.zfs, apart.
"""
