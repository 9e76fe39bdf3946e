"""Reports that scale: differences streamed as found, in text, --json, --jsonl and the
--write-lists files, all telling the same story; a run that fails part way never leaves a
document that reads as a verdict.  Run through the installed console script."""

import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.console import console_script, needs_installed_command, zverify
from tests.manifest.helpers import edited_manifest, write_manifest
from tests.treebuilder import sparse, write

pytestmark = needs_installed_command


@pytest.fixture
def messy(tmp_path: Path) -> tuple[Path, Path]:
    """A copy with one difference of every common kind, including a folded directory and a
    hardlink group split apart, and two attributes differing on one path."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    write(src / "a-content", b"one")
    write(src / "b-mode", b"same")
    write(src / "gone/x", b"1")
    write(src / "gone/sub/y", b"2")
    write(src / "linked1", b"shared")
    os.link(src / "linked1", src / "linked2")
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    write(dst / "a-content", b"two")
    os.utime(dst / "a-content", ns=(0, os.stat(src / "a-content").st_mtime_ns))
    os.chmod(dst / "b-mode", 0o600)
    os.utime(dst / "b-mode", (1, 1))
    subprocess.run(["rm", "-r", str(dst / "gone")], check=True)
    os.unlink(dst / "linked2")
    subprocess.run(["cp", "-p", str(dst / "linked1"), str(dst / "linked2")], check=True)
    write(dst / "new", b"")
    for tree in (src, dst):  # the directories' own mtimes are not the point here
        os.utime(tree, (1, 1))
    return src, dst


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return zverify("compare", "--no-progress", *args)


def test_json_jsonl_and_text_tell_the_same_story(messy: tuple[Path, Path]) -> None:
    src, dst = map(str, messy)
    doc = json.loads(_run("--json", src, dst).stdout)
    lines = [json.loads(line) for line in _run("--jsonl", src, dst).stdout.splitlines()]
    text = _run(src, dst)

    header, *differences, last = lines
    # two runs: the same producer but for the times ("started" in the header, and the
    # summary line finishes it as the document does)
    made = [line.pop("producer") for line in (header, last, doc)]
    assert {k: v for k, v in made[0].items() if k != "started"} == {
        k: v for k, v in made[2].items() if k not in ("started", "finished")
    }
    assert set(made[1]) == set(made[2]) and made[1]["started"] == made[0]["started"]
    assert header == {"type": "header", "schema": "zverify.compare-lines/1", "src": src, "dst": dst}
    assert [{k: v for k, v in d.items() if k != "type"} for d in differences] == doc["differences"]
    assert {d["type"] for d in differences} == {"difference"}
    assert last["type"] == "summary" and last["complete"] is True
    assert {k: v for k, v in last.items() if k != "type"} == {
        k: v for k, v in doc.items() if k not in ("schema", "differences")
    }
    assert doc["schema"] == "zverify.compare/2" and doc["complete"] is True
    assert doc["total"] == len(doc["differences"]) == sum(doc["counts"].values())
    assert text.returncode == 1 and text.stdout.count("\n") > doc["total"]
    kinds = [(d["path"], d["kind"]) for d in doc["differences"]]
    # found in path order; the hardlink group only once the walk has seen all of it
    assert kinds == [
        ("a-content", "content"),
        ("b-mode", "mode"),
        ("b-mode", "mtime"),
        ("gone", "missing"),
        ("new", "extra"),
        ("linked1", "hardlink"),
    ]
    assert doc["differences"][3]["entries_below"] == 3  # x, sub, sub/y: folded, not listed


def test_differences_reach_a_pipe_while_the_walk_goes_on(tmp_path: Path) -> None:
    """A difference found first is on stdout long before a slow walk ends (| tee log)."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    write(src / "a", b"x")
    for i in range(8):  # holes are hashed as zeros: minutes of work, no disk space
        sparse(src / f"big{i}", 64 << 30, {})
    subprocess.run(["cp", "-a", "--sparse=always", str(src), str(dst)], check=True)
    os.chmod(dst / "a", 0o600)
    proc = subprocess.Popen(
        [console_script(), "compare", "--jsonl", "--threads", "1", str(src), str(dst)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd="/",
    )
    try:
        assert proc.stdout is not None
        # the header line may arrive on its own, a second before the first difference
        first_lines, deadline = "", time.monotonic() + 60
        while '"type": "difference"' not in first_lines and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
            assert ready, f"no difference on stdout within 60 s: {first_lines!r}"
            chunk = proc.stdout.read1(65536).decode()  # type: ignore[attr-defined]
            assert chunk, f"stdout closed before a difference: {first_lines!r}"
            first_lines += chunk
        still_running = proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
    assert '"path": "a", "kind": "mode"' in first_lines, first_lines
    assert still_running, "the run ended before its first difference was seen"


def test_write_lists_one_file_per_category(messy: tuple[Path, Path], tmp_path: Path) -> None:
    src, dst = map(str, messy)
    lists = tmp_path / "lists"
    done = _run("--write-lists", str(lists), src, dst)
    assert done.returncode == 1, done.stderr
    got = {name: (lists / name).read_bytes() for name in sorted(os.listdir(lists))}
    assert got == {
        "differ": b"a-content\nb-mode\nlinked1\nlinked2\n",  # b-mode once, both members
        "differ-dirs": b"",  # the roots' mtimes were made equal
        "error": b"",
        "extra": b"new\n",
        "missing": b"gone\n",
    }
    nul = tmp_path / "nul"
    _run("--write-lists", str(nul), "--from0", src, dst)
    assert (nul / "differ").read_bytes() == got["differ"].replace(b"\n", b"\0")

    # the list feeds back: only what differs is compared again
    again = _run("--json", "--files-from", str(lists / "differ"), src, dst)
    paths = {d["path"] for d in json.loads(again.stdout)["differences"]}
    assert paths == {"a-content", "b-mode", "linked1"}


def test_write_lists_name_unreadable_and_odd_paths(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    write(src / "line\nbreak", b"1")
    write(src / "same", b"2")
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    os.unlink(dst / "line\nbreak")
    manifest = write_manifest(src, tmp_path / "m.zvm")
    lists = tmp_path / "lists"
    done = _run("--write-lists", str(lists), str(manifest), str(dst))
    assert done.returncode == 2, done.stderr  # one name per line cannot hold it: refused
    assert "'line\\nbreak' holds a newline" in done.stderr and "--from0" in done.stderr
    assert (lists / "missing").read_bytes() == b""


def test_write_lists_into_a_file_is_refused(messy: tuple[Path, Path], tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = _run("--write-lists", str(blocker), *map(str, messy))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "--write-lists" in done.stderr, done.stderr


def test_json_and_jsonl_together_are_a_usage_error(messy: tuple[Path, Path]) -> None:
    done = _run("--json", "--jsonl", *map(str, messy))
    assert done.returncode == 2 and done.stdout == ""
    assert "--json and --jsonl" in done.stderr


@pytest.mark.parametrize("form", ["--json", "--jsonl"])
def test_a_run_failing_part_way_ends_its_document_without_a_verdict(
    tmp_path: Path, form: str
) -> None:
    """The manifest's trailer proves it was edited only after differences were reported:
    the document is ended, marked incomplete, and holds no verdict a script could take."""
    src, manifest = edited_manifest(tmp_path)
    done = _run(form, str(manifest), str(src))
    assert done.returncode == 2
    if form == "--json":
        doc: dict[str, Any] = json.loads(done.stdout)
        reported = doc["differences"]
    else:
        *records, doc = [json.loads(line) for line in done.stdout.splitlines()]
        reported = [r for r in records if r["type"] == "difference"]
    assert reported, "the edit was reported before the trailer was read"
    assert doc["complete"] is False and "digest mismatch" in doc["error"]
    assert "identical" not in doc and "exit_code" not in doc
    assert doc["error"] in done.stderr


def test_quiet_still_streams_nothing_but_the_verdict(messy: tuple[Path, Path]) -> None:
    done = _run("-q", *map(str, messy))
    assert done.returncode == 1 and done.stdout.startswith("DIFFERENT: 6 differences")
    assert done.stdout.count("\n") == 1
