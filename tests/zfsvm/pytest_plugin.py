"""pytest glue for real-ZFS tests: the ``zfs`` marker and the capability header line.

Loaded with ``-p tests.zfsvm.pytest_plugin`` (addopts) or called from the top
conftest; the fixtures themselves live in ``tests/zfs/conftest.py``.
"""

from tests.zfsvm.backend import availability


def pytest_configure(config):
    config.addinivalue_line("markers", "zfs: needs real OpenZFS (native /dev/zfs or the qemu VM)")


def pytest_report_header(config):
    return availability().header()
