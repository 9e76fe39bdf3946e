"""`zverify --version`: the package version and what does the work on this machine, so a
bug report or a benchmark says which hashing kernels ran and which ZFS was reachable."""

import platform

from zverify import __version__


def describe() -> list[str]:
    # imported here: a plain `zverify compare` never needs the ZFS side
    from zverify import _zvcore
    from zverify.zfs import command, lzc

    lines = [f"zverify {__version__}"]
    for algorithm, (implementation, kernel) in _zvcore.hash_backends().items():
        lines.append(f"{algorithm}: {implementation}, {kernel} kernel")
    lines.append(f"python: {platform.python_version()} ({platform.python_implementation()})")
    found = command.optional("version", timeout=10.0)
    zfs = ", ".join(found.split()) if found else "not reachable (no `zfs` command or no module)"
    lines.append(f"zfs: {zfs}")
    lines.append(f"pyzfs (libzfs_core): {'available' if lzc.available() else 'not installed'}")
    return lines
