"""Generate the committed send-stream fixtures (``tests/data/streams``) in the VM.

``python -m tools.zfsvm fixtures`` boots the VM, builds a small pool with
``guest/stream_content.sh``, writes one stream per entry of ``SPECS`` plus an
interrupted-and-resumed send, checks that the plain streams receive and that
received GUIDs match, and writes ``index.json``: per stream its kind, snapshot
names and GUIDs, flags, the exact command, size, sha256 and ``zstream dump``
record totals (an independent count for parser tests).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from tools.zfsvm import image
from tools.zfsvm.errors import HarnessError

POOL = "zv"
# A fixed key, so a raw-received dataset can be unlocked by tests; it protects nothing.
KEY_HEX = "7a766572696679" + "00" * 25
KEYFILE = "/root/zv-fixture.key"
CONTENT_SCRIPT = "tools/zfsvm/guest/stream_content.sh"
RESUME_CUT = 150000  # bytes of the full stream a receive sees before it is "interrupted"


@dataclass(frozen=True)
class StreamSpec:
    file: str
    kind: str
    dataset: str
    from_snap: str | None
    to_snap: str
    flags: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        incr = []
        if self.from_snap:
            incr = ["-I" if self.kind == "package-I" else "-i", f"@{self.from_snap}"]
        return ["zfs", "send", *self.flags, *incr, f"{self.dataset}@{self.to_snap}"]


SPECS = (
    StreamSpec("full_fs_s1.zstream", "full", "zv/fs", None, "s1"),
    StreamSpec("incr_fs_s1_s2.zstream", "incremental", "zv/fs", "s1", "s2"),
    StreamSpec("incr_empty_fs_s2_s3.zstream", "incremental-empty", "zv/fs", "s2", "s3"),
    StreamSpec("package_I_fs_s1_s3.zstream", "package-I", "zv/fs", "s1", "s3"),
    StreamSpec("replicate_R_fs_s2.zstream", "replication-R", "zv/fs", None, "s2", ("-R",)),
    StreamSpec("compressed_c_fs_s1.zstream", "full", "zv/fs", None, "s1", ("-c",)),
    StreamSpec("embed_large_Le_fs_s1.zstream", "full", "zv/fs", None, "s1", ("-L", "-e")),
    StreamSpec("raw_w_enc_s1.zstream", "full-raw", "zv/enc", None, "s1", ("-w",)),
    StreamSpec("raw_w_enc_s1_s2.zstream", "incremental-raw", "zv/enc", "s1", "s2", ("-w",)),
)


def snapshot_guids(vm) -> dict[str, int]:
    out = vm.run(
        ["zfs", "list", "-Hp", "-o", "name,guid", "-t", "snapshot", "-r", POOL], check=True
    )
    return {
        name: int(guid) for name, guid in (line.split("\t") for line in out.stdout.splitlines())
    }


def contained(spec: StreamSpec, guids: dict[str, int]) -> list[dict]:
    """Snapshots a stream carries: one, a -I range, or a whole -R tree up to its snapshot."""
    order = sorted({n.split("@")[1] for n in guids})
    if spec.kind == "package-I":
        snaps = [s for s in order if spec.from_snap < s <= spec.to_snap]
        names = [f"{spec.dataset}@{s}" for s in snaps]
    elif spec.kind == "replication-R":
        names = [
            n
            for n in guids
            if (n.startswith(spec.dataset + "@") or n.startswith(spec.dataset + "/"))
            and n.split("@")[1] <= spec.to_snap
        ]
    else:
        names = [f"{spec.dataset}@{spec.to_snap}"]
    return [{"name": n, "guid": guids[n]} for n in sorted(names)]


def zstream_totals(vm, guest_path: str) -> dict[str, int]:
    out = vm.run(["zstream", "dump", guest_path], check=True, timeout=600).stdout
    return {m[1]: int(m[2]) for m in re.finditer(r"Total (\w+) records = (\d+)", out)}


def describe(vm, spec: StreamSpec, guids: dict[str, int], outdir: Path) -> dict:
    path = outdir / spec.file
    frm = f"{spec.dataset}@{spec.from_snap}" if spec.from_snap else None
    to = f"{spec.dataset}@{spec.to_snap}"
    return {
        "file": spec.file,
        "kind": spec.kind,
        "dataset": spec.dataset,
        "from": frm,
        "from_guid": guids[frm] if frm else None,
        "to": to,
        "to_guid": guids[to],
        "flags": list(spec.flags) + (["-I" if spec.kind == "package-I" else "-i"] if frm else []),
        "command": shlex.join(spec.argv()),
        "size": path.stat().st_size,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "contains": contained(spec, guids),
        "zstream_totals": zstream_totals(vm, f"{vm.exchange_guest}/{spec.file}"),
    }


def send_all(vm, guids) -> list[dict]:
    entries = []
    for spec in SPECS:
        vm.run(
            ["sh", "-c", f'{shlex.join(spec.argv())} >"$0"', f"{vm.exchange_guest}/{spec.file}"],
            check=True,
            timeout=600,
        )
        entries.append(describe(vm, spec, guids, vm.exchange_host))
    return entries


def resumed_send(vm, guids) -> list[dict]:
    """Interrupt a receive (-s) after RESUME_CUT bytes, then produce the ``send -t`` stream."""
    x = vm.exchange_guest
    cut, resumed = "truncated_full_fs_s1.zstream", "resumed_fs_s1.zstream"
    vm.run(["sh", "-c", f"head -c {RESUME_CUT} {x}/full_fs_s1.zstream >{x}/{cut}"], check=True)
    r = vm.run(["sh", "-c", f"zfs receive -s zv/resumed <{x}/{cut}"])
    if r.returncode == 0:
        raise HarnessError("receive of a truncated stream succeeded: cannot make a resume token")
    token = vm.run(
        ["zfs", "get", "-H", "-o", "value", "receive_resume_token", "zv/resumed"], check=True
    ).stdout.strip()
    vm.run(["sh", "-c", f'zfs send -t "$0" >{x}/{resumed}', token], check=True)
    vm.run(["sh", "-c", f"zfs receive -s zv/resumed <{x}/{resumed}"], check=True)
    got = snapshot_guids(vm)["zv/resumed@s1"]
    if got != guids["zv/fs@s1"]:
        raise HarnessError(f"resumed receive produced GUID {got}, expected {guids['zv/fs@s1']}")
    return _resume_entries(vm, guids, cut, resumed, token)


def _resume_entries(vm, guids, cut, resumed, token) -> list[dict]:
    host = vm.exchange_host
    common = {
        "dataset": "zv/fs",
        "from": None,
        "from_guid": None,
        "to": "zv/fs@s1",
        "to_guid": guids["zv/fs@s1"],
        "contains": [{"name": "zv/fs@s1", "guid": guids["zv/fs@s1"]}],
    }
    trunc = {
        "file": cut,
        "kind": "truncated",
        **common,
        "flags": [],
        "command": f"head -c {RESUME_CUT} full_fs_s1.zstream",
        "truncated_from": "full_fs_s1.zstream",
    }
    res = {
        "file": resumed,
        "kind": "resumed",
        **common,
        "flags": ["-t"],
        "command": "zfs send -t <resume_token>",
        "resume_token": token,
        "resumes_after": cut,
        "zstream_totals": zstream_totals(vm, f"{vm.exchange_guest}/{resumed}"),
    }
    for entry in (trunc, res):
        data = (host / entry["file"]).read_bytes()
        entry.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    return [trunc, res]


def check_receivable(vm, guids) -> None:
    """Receive full, incremental, empty incremental in order; every GUID must match the source."""
    x = vm.exchange_guest
    for spec in SPECS[:3]:
        vm.run(["sh", "-c", f"zfs receive -u zv/check <{x}/{spec.file}"], check=True, timeout=600)
    got = snapshot_guids(vm)
    for snap in ("s1", "s2", "s3"):
        if got[f"zv/check@{snap}"] != guids[f"zv/fs@{snap}"]:
            raise HarnessError(f"received zv/check@{snap} has another GUID than zv/fs@{snap}")


def generate(out: str) -> None:
    from tools.zfsvm.vm import ZfsVM

    outdir = Path(out)
    start = time.monotonic()
    with ZfsVM.boot(scratch_disks=1, scratch_gib=1) as vm:
        vm.run(["sh", "-c", f'umask 077; printf %s "$0" >{KEYFILE}', KEY_HEX], check=True)
        vm.run(["sh", CONTENT_SCRIPT, vm.scratch_devices[0], KEYFILE], check=True, timeout=600)
        guids = snapshot_guids(vm)
        entries = send_all(vm, guids) + resumed_send(vm, guids)
        check_receivable(vm, guids)
        versions = vm.run(
            ["sh", "-c", "uname -r; zfs version | head -n 1"], check=True
        ).stdout.split()
        _write(outdir, vm.exchange_host, entries, guids, versions)
    image.log(
        f"fixtures: {len(entries)} streams written to {outdir} in {time.monotonic() - start:.0f}s"
    )


def _write(outdir: Path, src: Path, entries, guids, versions) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    for old in outdir.glob("*.zstream"):
        old.unlink()
    for entry in entries:
        shutil.copyfile(src / entry["file"], outdir / entry["file"])
    index = {
        "generated_by": "python -m tools.zfsvm fixtures",
        "kernel": versions[0],
        "zfs_version": versions[1],
        "pool": POOL,
        "encryption_key_hex": KEY_HEX,
        "snapshots": guids,
        "streams": entries,
    }
    (outdir / "index.json").write_text(json.dumps(index, indent=1) + "\n")
