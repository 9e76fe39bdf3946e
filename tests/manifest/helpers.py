"""Write manifests and compare with the installed console script, as scripts would."""

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

from tests.cli.console import console_script
from tests.treebuilder import write

# Keys of a compare document that name the inputs rather than the verdict.
# What says where the entries came from, and the producer (its times differ run to run).
INPUT_KEYS = ("src", "dst", "src_escaped", "dst_escaped", "notes", "unverifiable", "producer")


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([console_script(), *args], capture_output=True, input=stdin)


def write_manifest(tree: Path, out: Path, *extra: str) -> Path:
    done = run("manifest", "-q", str(tree), "-o", str(out), *extra)
    assert done.returncode == 0, done.stderr.decode()
    return out


def edited_manifest(base: Path) -> tuple[Path, Path]:
    """(tree, manifest of it with one size edited): every line stays valid JSON, so a
    comparison reports the edit as a difference before the trailer's digest proves it."""
    tree = base / "src"
    for i in range(20):
        write(tree / f"f{i:02d}", b"%d" % i)
    manifest = write_manifest(tree, base / "m.zvm")
    lines = manifest.read_bytes().splitlines(keepends=True)
    entry = json.loads(lines[3])
    entry["size"] += 1
    lines[3] = json.dumps(entry, separators=(",", ":")).encode() + b"\n"
    manifest.write_bytes(b"".join(lines))
    return tree, manifest


def compare(src: Path | str, dst: Path | str, *extra: str) -> tuple[int, dict[str, Any]]:
    done = run("compare", "--json", *extra, str(src), str(dst))
    assert done.stdout, done.stderr.decode()
    return done.returncode, json.loads(done.stdout)


def compare_fails(src: Path | str, dst: Path | str, *extra: str) -> str:
    """Run a comparison that must end with exit 2 and no verdict; return its one-line error.
    A document begun before the failure is ended without a verdict (report/compare_json.py)."""
    done = run("compare", "--json", *extra, str(src), str(dst))
    assert done.returncode == 2, (done.returncode, done.stdout[:300])
    if done.stdout:
        doc = json.loads(done.stdout)
        assert doc["complete"] is False and "identical" not in doc, doc
        assert doc["error"] in done.stderr.decode(), (doc["error"], done.stderr)
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def verdict(doc: dict[str, Any]) -> dict[str, Any]:
    """The parts of a compare document that must not depend on where the entries came from."""
    kept = copy.deepcopy({k: v for k, v in doc.items() if k not in INPUT_KEYS})
    for side in ("src", "dst"):
        kept["sizes"][side].pop("filesystem")
        kept["sizes"][side].pop("zfs")
    return kept
