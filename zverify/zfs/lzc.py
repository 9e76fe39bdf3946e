"""libzfs_core calls through pyzfs: the library half of the ZFS boundary (command.py is the
other half, for what libzfs_core has no call for).

pyzfs ships with OpenZFS (Debian: python3-pyzfs), not on PyPI, so it is imported on first
use, and its absence is a ZfsError like a missing `zfs` command.  Every call goes through
call(), which turns whatever pyzfs raises into ZfsError naming the function, its arguments
and the errno: no caller ever sees a pyzfs exception, or a None standing for a failure.
"""

import errno as errnos
from importlib import import_module
from types import ModuleType
from typing import Any

from zverify.errors import ZfsError


def available() -> bool:
    """True when libzfs_core can be called here (pyzfs installed, libzfs_core loadable)."""
    try:
        _module()
    except ZfsError:
        return False
    return True


def call(function: str, *args: Any) -> Any:
    """libzfs_core.<function>(*args); raises ZfsError on any failure."""
    what = [f"libzfs_core.{function}", *(_shown(a) for a in args)]
    target = getattr(_module(), function, None)
    if target is None:
        raise ZfsError(what, None, "no such call in this pyzfs", errno=errnos.ENOSYS)
    try:
        return target(*args)
    except Exception as err:  # pyzfs raises ZFSError subclasses, and plain errors too
        code = getattr(err, "errno", None)
        raise ZfsError(what, None, _describe(err), errno=code or errnos.EIO) from err


def _module() -> ModuleType:
    try:
        return import_module("libzfs_core")
    except Exception as err:  # ImportError, or OSError from loading libzfs_core.so
        raise ZfsError(["import libzfs_core"], None, f"pyzfs unavailable: {err}") from None


def _describe(err: Exception) -> str:
    """pyzfs's message, plus the per-item errors of a multi-item operation."""
    inner = getattr(err, "errors", None) or []
    details = "; ".join(str(e) for e in inner)
    return f"{err} ({details})" if details else str(err)


def _shown(arg: Any) -> str:
    if isinstance(arg, bytes):
        return arg.decode("utf-8", "backslashreplace")
    if isinstance(arg, list | tuple):
        return ",".join(_shown(a) for a in arg)
    return repr(arg)
