"""ZFS: send streams, and the only modules that talk to ZFS (zfscli, lzc)."""
