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
