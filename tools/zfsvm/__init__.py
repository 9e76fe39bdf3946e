"""Real OpenZFS for zverify's tests: a cached Debian VM image booted under qemu.

The host has no ZFS module, so tests that need real ZFS run in a small Debian 12
guest with zfs-dkms. The image is built once (``python -m tools.zfsvm build``)
into a cache outside the repository, keyed by everything that went into it, and
booted once per test session; commands go to the guest over a virtio-serial
channel and come back as ``subprocess.CompletedProcess`` objects, the same type
the native backend (a host with ``/dev/zfs``) returns.

Layout: ``config`` (paths, package lists, cache key), ``image`` (preflight and
build), ``vm`` (boot and the command channel), ``native`` (hosts with ZFS),
``backend`` (which of the two to use), ``pools`` (scratch pools), ``qemu`` (the
command line), ``cli`` (``python -m tools.zfsvm``), ``streams`` (send-stream
fixtures), ``guest/`` (files that run in the VM).  A tool, not a test: tests/zfs
uses it (its fixtures and the header line are in tests/), and so does bench/.
"""

from tools.zfsvm.errors import HarnessError

__all__ = ["HarnessError"]
