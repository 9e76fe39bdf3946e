"""zverify.zfs.command on real OpenZFS: answers, and failures as typed errors (never None)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.zfs

PROBE = """
import json, sys
from zverify.errors import ZfsError
from zverify.zfs import command
out = {"list": command.run("list", "-Hp", "-o", "name", sys.argv[1]).split()}
out["hint"] = command.optional("list", "-H", "nosuch/dataset")
try:
    command.run("list", "-H", "nosuch/dataset")
except ZfsError as err:
    out["error"] = {"argv": err.argv[1:], "rc": err.returncode, "stderr": err.stderr,
                    "message": str(err)}
print(json.dumps(out))
"""


def test_failures_raise_with_command_status_and_stderr(zfs_host, zfs_pool):
    done = zfs_host.run([*zfs_host.python, "-c", PROBE, zfs_pool.name], check=True)
    out = json.loads(done.stdout)
    assert out["list"] == [zfs_pool.name]
    assert out["hint"] is None  # hints may fail quietly ...
    err = out["error"]  # ... answers may not
    assert err["argv"] == ["list", "-H", "nosuch/dataset"]
    assert err["rc"] == 1 and "does not exist" in err["stderr"]
    assert "exit 1" in err["message"] and "does not exist" in err["message"]


LZC_PROBE = """
import json, sys
from zverify.errors import ZfsError
from zverify.zfs import lzc
pool = sys.argv[1].encode()
out = {"available": lzc.available(), "exists": lzc.call("lzc_exists", pool)}
for name, args in (("missing", (pool + b"/nope",)), ("snapshot", ([pool + b"/nope@s"],)),
                   ("nosuch", ())):
    try:
        lzc.call({"missing": "lzc_get_bookmarks", "snapshot": "lzc_snapshot",
                  "nosuch": "lzc_no_such_call"}[name], *args)
    except ZfsError as err:
        out[name] = {"argv": err.argv, "errno": err.errno, "message": str(err)}
print(json.dumps(out))
"""


def test_libzfs_core_failures_raise_typed_errors(zfs_host, zfs_pool):
    done = zfs_host.run([*zfs_host.python, "-c", LZC_PROBE, zfs_pool.name], check=True)
    out = json.loads(done.stdout)
    assert out["available"] is True and out["exists"] is True
    missing = out["missing"]
    assert missing["argv"] == ["libzfs_core.lzc_get_bookmarks", f"{zfs_pool.name}/nope"]
    assert missing["errno"] == 2 and "errno 2" in missing["message"]
    snapshot = out["snapshot"]  # a multi-item failure names the item's own error
    assert snapshot["errno"] == 2 and "Filesystem not found" in snapshot["message"]
    assert out["nosuch"]["errno"] == 38  # ENOSYS
