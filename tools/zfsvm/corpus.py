"""Generate the stream corpus (``tests/data/corpus/<release>.tar.xz``) in the VM.

``python -m tools.zfsvm corpus --release 2.1`` boots the VM of that OpenZFS
release, runs ``guest/corpus.sh`` (a replay of the workloads of OpenZFS's own
send/receive tests), and packs every stream with what it was sent from and how
the suite's receive of it ended into one xz tarball: ``index.json`` plus
``streams/<id>.zs``. Per stream the index keeps: id, scenario, fault (why a
receive may refuse it: ``none``, damage in the bytes, or a receive context
that does not fit), derived_from, send argv, the source pool's snapshots
(name, guid, createtxg), receive argv, exit status, stderr's first line,
size and sha256.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import shlex
import tarfile
import time
from pathlib import Path

from tools.zfsvm import config, image
from tools.zfsvm.errors import HarnessError

SCRIPT = "tools/zfsvm/guest/corpus.sh"
# Faults whose reason for a refusal lies in the stream's own bytes.
STREAM_FAULTS = frozenset({"truncated", "trunc", "flip", "empty", "garbage"})


def default_out(release: str) -> Path:
    return config.REPO_ROOT / "tests" / "data" / "corpus" / f"{release}.tar.xz"


def _source_list(text: str) -> list[dict]:
    rows = []
    for line in text.splitlines():
        name, guid, txg = line.split("\t")
        rows.append({"name": name, "guid": int(guid), "createtxg": int(txg)})
    return rows


def _entry(row: list[str], outdir: Path) -> dict:
    sid, scenario, fault, parent, send, recv, status = row
    data = (outdir / f"{sid}.zs").read_bytes()
    err_path = outdir / f"{sid}.err"
    err = err_path.read_text(errors="replace").strip() if err_path.exists() else ""
    return {
        "id": sid,
        "scenario": scenario,
        "fault": fault,
        "fault_in_stream": fault in STREAM_FAULTS,
        "derived_from": None if parent == "-" else parent,
        "send_argv": shlex.split(send),
        "source": _source_list((outdir / f"{sid}.list").read_text()),
        "receive_argv": shlex.split(recv),
        "receive_status": int(status),
        "receive_stderr": err.splitlines()[0] if err else "",
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def collect(outdir: Path) -> list[dict]:
    rows = [line.split("\t") for line in (outdir / "manifest.tsv").read_text().splitlines() if line]
    return [_entry(row, outdir) for row in rows]


def pack(outdir: Path, entries: list[dict], meta: dict, dest: Path) -> None:
    """One xz tarball, members in id order with fixed metadata (reproducible bytes)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    index = json.dumps({**meta, "streams": entries}, indent=0).encode()
    with (
        lzma.open(dest, "wb", preset=9 | lzma.PRESET_EXTREME) as xz,
        tarfile.open(fileobj=xz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        _add(tar, "index.json", index)
        for entry in entries:
            _add(tar, f"streams/{entry['id']}.zs", (outdir / f"{entry['id']}.zs").read_bytes())


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def generate(release: str = config.DEFAULT_RELEASE, out: str | None = None) -> Path:
    from tools.zfsvm.vm import ZfsVM

    dest = Path(out) if out else default_out(release)
    start = time.monotonic()
    with ZfsVM.boot(scratch_disks=1, scratch_gib=4, release=release) as vm:
        guest_out = f"{vm.exchange_guest}/corpus"
        r = vm.run(["bash", SCRIPT, vm.scratch_devices[0], guest_out], timeout=7200)
        if r.returncode != 0:
            raise HarnessError(f"corpus.sh exit {r.returncode}: {r.stderr.strip()[-300:]}")
        entries = pack_run(vm.exchange_host / "corpus", release, dest, time.monotonic() - start)
    image.log(
        f"corpus: {len(entries)} streams ({release}) written to {dest}"
        f" ({dest.stat().st_size} bytes) in {time.monotonic() - start:.0f}s"
    )
    return dest


def pack_run(outdir: Path, release: str, dest: Path, seconds: float | None = None) -> list[dict]:
    """Pack a run directory of corpus.sh (also a copy of one cut short: only the streams
    whose receive was recorded are kept, and the index says the run was partial)."""
    entries = collect(outdir)
    version = outdir / "version"
    timing = outdir / "timing.tsv"
    meta = {
        "generated_by": f"python -m tools.zfsvm corpus --release {release}",
        "release": release,
        "complete": version.exists(),
        "zfs_version": version.read_text().strip() if version.exists() else None,
        "step_seconds": dict(
            line.split("\t")
            for line in (timing.read_text() if timing.exists() else "").splitlines()
        ),
        "generation_seconds": round(seconds) if seconds is not None else None,
    }
    pack(outdir, entries, meta, dest)
    return entries


def load(path: Path) -> tuple[dict, dict[str, bytes]]:
    """The index and the streams of a corpus tarball (host tests read it this way)."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: corpus missing; regenerate: python -m tools.zfsvm corpus")
    streams: dict[str, bytes] = {}
    index: dict = {}
    with tarfile.open(path, "r:xz") as tar:
        for member in tar:
            f = tar.extractfile(member)
            if f is None:
                continue
            if member.name == "index.json":
                index = json.loads(f.read())
            else:
                streams[Path(member.name).stem] = f.read()
    return index, streams
