"""The only module that runs the `zfs` and `zpool` commands.

Always with -H -p (tab-separated, exact numbers), with a timeout, and
returning None rather than raising when ZFS is not there: size explanations
are better with ZFS properties but do not depend on them.
"""

import shutil
import subprocess

SIZE_PROPERTIES = ("compression", "compressratio", "recordsize")


def run_zfs(*args: str, timeout: float = 30.0) -> str | None:
    """stdout of `zfs ARGS`, or None if zfs is absent or fails."""
    zfs = shutil.which("zfs")
    if zfs is None:
        return None
    try:
        done = subprocess.run(
            [zfs, *args], capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def dataset_properties(dataset: str) -> dict[str, str] | None:
    """{'dataset': ..., 'compression': 'lz4', 'compressratio': '1.83', 'recordsize': '131072'}."""
    out = run_zfs("get", "-Hp", "-o", "property,value", ",".join(SIZE_PROPERTIES), dataset)
    if out is None:
        return None
    props = {"dataset": dataset}
    for line in out.splitlines():
        name, _, value = line.partition("\t")
        props[name] = value
    return props
