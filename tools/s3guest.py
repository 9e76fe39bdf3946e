"""versitygw inside the ZFS VM (tools/zfsvm), on the guest's loopback: the VM has no network
to the host, and zverify runs where ZFS is.  Used by tests/cold/test_zfs_s3.py and
bench/cold_vs_peers.py --s3."""

from __future__ import annotations

import shutil

from tools.s3server import binary

KEYS = {"AWS_ACCESS_KEY_ID": "zverifyvmaccess01", "AWS_SECRET_ACCESS_KEY": "zverifyvmsecret0000001"}
PORT = 7070
BACKEND = "/root/s3/data"  # BACKEND/BUCKET/KEY is the plain file of an object

# lo is down in the VM (no networking is configured): bring it up with the ioctls `ip link`
# would use (SIOCGIFFLAGS / SIOCSIFFLAGS, IFF_UP)
LOOPBACK_UP = """
import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH22x", fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0)))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))
"""
WAIT_PORT = """
import socket, sys, time
for _ in range(300):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
"""


class GuestServerError(RuntimeError):
    pass


def start(host) -> dict[str, str]:
    """Start versitygw in the guest (the binary through the exchange share); the AWS_*
    variables that reach it.  Raises GuestServerError with why."""
    exe, where = binary()
    if exe is None:
        raise GuestServerError(f"versitygw is not built ({where}): scripts/versitygw.sh builds it")
    shutil.copy2(exe, f"{host.exchange_host}/versitygw")
    host.run([*host.python, "-c", LOOPBACK_UP], check=True)
    script = (
        f"rm -rf /root/s3 && mkdir -p {BACKEND} /root/s3/versions /root/s3/iam && "
        f"cp {host.exchange_guest}/versitygw /root/s3/\n"  # only the server in the background
        f"setsid /root/s3/versitygw --port 127.0.0.1:{PORT} --iam-dir /root/s3/iam posix "
        f"--versioning-dir /root/s3/versions {BACKEND} </dev/null >/root/s3/log 2>&1 &"
    )
    root = {
        "ROOT_ACCESS_KEY": KEYS["AWS_ACCESS_KEY_ID"],
        "ROOT_SECRET_KEY": KEYS["AWS_SECRET_ACCESS_KEY"],
    }
    host.run(["bash", "-c", script], env=root, check=True)
    if host.run([*host.python, "-c", WAIT_PORT, str(PORT)], timeout=120).returncode != 0:
        log = host.run(["tail", "-20", "/root/s3/log"]).stdout
        raise GuestServerError(f"versitygw did not start in the VM:\n{log}")
    return {
        **KEYS,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{PORT}",
    }


def stop(host) -> None:
    host.run(["pkill", "-f", "/root/s3/versitygw"])


def make_bucket(host, env: dict[str, str], name: str) -> None:
    make = f"import boto3; boto3.client('s3').create_bucket(Bucket='{name}')"
    host.run([*host.python, "-c", make], check=True, env=env)
