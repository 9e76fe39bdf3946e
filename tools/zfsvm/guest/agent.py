"""Command agent run by the VM's init: executes the host's requests, one at a time.

Protocol (JSON lines over the virtio-serial port named ``zvagent``):
request  ``{"id": n, "op": "run", "argv": [...], "timeout": s, "env": {...},
           "cwd": str|null, "stdin_b64": str|null}``, or ``{"id": n, "op": "ping"}``,
           or ``{"id": n, "op": "shutdown"}``;
reply    ``{"id": n, "rc": int, "stdout_b64": str, "stderr_b64": str,
           "timed_out": bool, "seconds": f}``.
Output travels as base64 because commands may print bytes that are not UTF-8.
The agent says ``{"id": 0, "op": "hello"}`` when it starts, so the host knows the guest is up.
Standard library only: this file is copied into the guest at each boot.
"""

import base64
import glob
import json
import os
import subprocess
import time

PORT_NAME = "zvagent"
BASE_ENV = {
    "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LC_ALL": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONPATH": "/zv/repo:/zv/pydeps",
}


def find_port():
    """The /dev node of our virtio-serial port, found by its name in sysfs."""
    for namefile in glob.glob("/sys/class/virtio-ports/*/name"):
        with open(namefile) as fh:
            if fh.read().strip() == PORT_NAME:
                return "/dev/" + os.path.basename(os.path.dirname(namefile))
    raise SystemExit(f"agent: no virtio port named {PORT_NAME}")


def b64(data):
    return base64.b64encode(data or b"").decode("ascii")


def run(req):
    env = dict(BASE_ENV)
    env.update(req.get("env") or {})
    stdin = base64.b64decode(req["stdin_b64"]) if req.get("stdin_b64") else None
    start = time.monotonic()
    try:
        proc = subprocess.run(
            req["argv"],
            input=stdin,
            capture_output=True,
            env=env,
            cwd=req.get("cwd") or "/zv/repo",
            timeout=req.get("timeout"),
            stdin=None if stdin is not None else subprocess.DEVNULL,
        )
        rc, out, err, timed_out = proc.returncode, proc.stdout, proc.stderr, False
    except subprocess.TimeoutExpired as exc:
        rc, out, err, timed_out = -9, exc.stdout, exc.stderr, True
    except OSError as exc:
        # Same convention as a shell: 127 for a missing program, 126 otherwise.
        rc = 127 if isinstance(exc, FileNotFoundError) else 126
        out, err, timed_out = b"", f"agent: {exc}\n".encode(), False
    return {
        "rc": rc,
        "stdout_b64": b64(out),
        "stderr_b64": b64(err),
        "timed_out": timed_out,
        "seconds": round(time.monotonic() - start, 3),
    }


def handle(req):
    op = req.get("op")
    if op == "run":
        return run(req)
    if op == "ping":
        return {"pong": True, "uname": os.uname().release}
    if op == "shutdown":
        return {"bye": True}
    return {"error": f"unknown op {op!r}"}


def lines(fd):
    """Yield request lines; a read of 0 bytes only means the host is not connected yet."""
    buf = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            time.sleep(0.2)
            continue
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line.strip():
                yield line


def send(fd, msg):
    data = (json.dumps(msg) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


def main():
    fd = os.open(find_port(), os.O_RDWR)
    send(fd, {"id": 0, "op": "hello", "uname": os.uname().release})
    for line in lines(fd):
        try:
            req = json.loads(line)
        except ValueError:
            continue
        reply = handle(req)
        reply["id"] = req.get("id")
        send(fd, reply)
        if req.get("op") == "shutdown":
            break
    os.close(fd)


if __name__ == "__main__":
    main()
