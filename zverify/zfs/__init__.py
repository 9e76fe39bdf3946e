"""Live ZFS: the only package that runs `zfs`/`zpool` (command.py) or calls libzfs_core
(lzc.py).  Both raise zverify.errors.ZfsError for every failure; command.optional() is the
one explicit way to treat a failure as "no hint".  ops.py is the vocabulary on top of them:
one typed verb per operation (exists, hold, release, bookmark, destroy_tree, send, ...), so
that nothing outside this package spells a zfs argv or libzfs_core's arguments.

Offline send-stream parsing lives apart, in zverify.sendstream.
"""
