"""Offline send-stream code: no ZFS module, pool or `zfs` command is needed.

format (record layouts), nvlist (XDR/native decoding), token (resume tokens) and
validate (a whole stream -> StreamReport).  Live ZFS is zverify.zfs, apart.
"""
