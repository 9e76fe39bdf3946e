"""Faults while a manifest is written: what could not be read is recorded as an error (the
command exits 2 and every later comparison against it exits 2), and a walk that cannot
finish leaves no manifest behind at all."""

import json
from pathlib import Path

import pytest

from tests.faults.helpers import Harness, Trees, sanitizer_reason
from tests.manifest.helpers import compare, compare_fails

_why_not = sanitizer_reason()
pytestmark = pytest.mark.skipif(_why_not is not None, reason=_why_not or "")


def test_unreadable_xattrs_are_recorded_as_errors(
    harness: Harness, trees: Trees, tmp_path: Path
) -> None:
    out = tmp_path / "src.zvm"
    run = harness.run("fgetxattr:1:EIO", "manifest", "-q", str(trees.src), "-o", str(out))
    assert run.fired, run.describe()
    assert run.returncode == 2 and "could not be read" in run.stderr, run.describe()
    code, doc = compare(out, trees.dst)
    assert code == 2 and doc["identical"] is False
    (error,) = [d for d in doc["differences"] if d["kind"] == "error"]
    assert "SRC: xattr" in error["detail"] and "Input/output error" in error["detail"]
    code, doc = compare(trees.src, out, "--json")
    assert code == 2 and doc["counts"]["error"] == 1


def test_a_walk_that_cannot_finish_leaves_no_manifest(
    harness: Harness, trees: Trees, tmp_path: Path
) -> None:
    """Memory that stays exhausted from some allocation on: the walk fails part-way, and
    neither the target file nor a partial one may be left to be mistaken for a manifest.
    A hashing thread that cannot get its buffer marks what it claims as unreadable; when
    it starts after the others have claimed every file, nothing was lost and the run may
    succeed, but then its manifest must be the clean run's, entry for entry."""
    out = tmp_path / "src.zvm"
    clean = harness.run(None, "manifest", "-q", str(trees.src), "-o", str(tmp_path / "ok.zvm"))
    assert clean.returncode == 0, clean.describe()
    unfinished = []
    for n in range(max(2, clean.counts["malloc"] // 2), clean.counts["malloc"], 7):
        run = harness.run(f"malloc:{n}+", "manifest", "-q", str(trees.src), "-o", str(out))
        if not run.fired:
            continue
        if run.returncode == 0:  # only a spare worker failed; another one did its work
            assert entries(out) == entries(tmp_path / "ok.zvm"), run.describe()
            out.unlink()
            continue
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.describe()
        if "could not finish" in run.stderr:
            unfinished.append(run)
            assert not out.exists(), run.describe()
        else:  # the failure hit one entry (an xattr read, say): recorded as its error
            assert "recorded as errors" in run.stderr, run.describe()
        out.unlink(missing_ok=True)
    assert unfinished, "no allocation failure stopped the walk"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.zvm"]


def entries(manifest: Path) -> list[str]:
    """A manifest's entry lines: without the header (it holds the time of creation) and
    without the trailer."""
    return manifest.read_text().splitlines()[1:-1]


def test_a_manifest_on_stdout_without_its_trailer_never_verifies(
    harness: Harness, trees: Trees, tmp_path: Path
) -> None:
    clean = harness.run(None, "manifest", "-q", str(trees.src), "-o", str(tmp_path / "ok.zvm"))
    n = clean.counts["malloc"] * 3 // 4
    run = harness.run(f"malloc:{n}+", "manifest", "-q", str(trees.src), "-o", "-")
    assert run.fired and run.returncode == 2, run.describe()
    partial = tmp_path / "partial.zvm"
    partial.write_text(run.stdout)
    assert json.loads(run.stdout.splitlines()[0])["zverify_manifest"] == 1
    message = compare_fails(partial, trees.dst)
    assert message.endswith(
        f"truncated after line {len(run.stdout.splitlines())}: the trailer line is missing"
    )
