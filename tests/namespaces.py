"""Private mount namespaces for tests that make a file really absent (unshare -m, root only):
an empty tmpfs or /dev/null bound over it, seen by the command the test runs and nobody else."""

import os
import shutil
import subprocess

import pytest


def usable() -> bool:
    """Whether this process may make a mount namespace and mount in it."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = ["unshare", "-m", "mount", "-t", "tmpfs", "none", "/mnt"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def needed(why: str) -> pytest.MarkDecorator:
    """Skip the marked tests, saying why, where no namespace can be made."""
    return pytest.mark.skipif(
        not usable(), reason=f"needs root and mount namespaces (unshare -m) {why}"
    )
