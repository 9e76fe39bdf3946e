"""Live ZFS: the only package that runs `zfs`/`zpool` or calls libzfs_core.

Offline send-stream parsing lives apart, in zverify.sendstream.
"""
