"""Live ZFS: the only package that runs `zfs`/`zpool` (command.py) or calls libzfs_core
(lzc.py).  Both raise zverify.errors.ZfsError for every failure; command.optional() is the
one explicit way to treat a failure as "no hint".

Offline send-stream parsing lives apart, in zverify.sendstream.
"""
