"""The filter findings of the third hostile review (C6, H1, L2, L3), each as its repro run
through the installed command, with rsync's answer to the same rules where it has one."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import needs_installed_command, zverify
from tests.treebuilder import write
from zverify.filters import Filter
from zverify.pathnames import for_manifest as escape

RSYNC = shutil.which("rsync")
NEWLINE_NAME = "new\nline"


def _same_times(src: Path, dst: Path) -> None:
    """Directory mtimes as in SRC, so that only the files' content can differ."""
    for root, dirs, _ in os.walk(src):
        for d in [*dirs, ""]:
            rel = Path(root, d).relative_to(src)
            os.utime(dst / rel, ns=(0, os.stat(src / rel).st_mtime_ns))


def _rsync_changes(src: Path, dst: Path, *rules: str) -> list[str]:
    if RSYNC is None:
        pytest.skip("rsync is not installed: nothing to hold zverify to")
    done = subprocess.run(
        [RSYNC, "-ainc", "--out-format=%i %n", *rules, f"{src}/", f"{dst}/"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.splitlines()


@pytest.fixture
def homes(tmp_path: Path) -> tuple[Path, Path]:
    """C6's trees: home/u/f differs, other/ is the same."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    write(src / "home/u/f", b"a\n")
    write(dst / "home/u/f", b"b\n")
    (src / "other").mkdir()
    (dst / "other").mkdir()
    os.utime(dst / "home/u/f", ns=(0, os.stat(src / "home/u/f").st_mtime_ns))
    _same_times(src, dst)
    return src, dst


@needs_installed_command
def test_c6_triple_star_includes_the_directory_and_all_below(homes: tuple[Path, Path]) -> None:
    src, dst = homes
    rules = ["--include=home/***", "--exclude=*"]
    assert any(line.endswith(" home/u/f") for line in _rsync_changes(src, dst, *rules))
    done = zverify("compare", "--json", *rules, str(src), str(dst))
    assert done.returncode == 1, done.stdout
    doc = json.loads(done.stdout)
    assert [d["path"] for d in doc["differences"]] == ["home/u/f"]
    assert doc["excluded"]["entries"] == {"src": 1, "dst": 1}  # other/, nothing else


@needs_installed_command
def test_the_first_matching_rule_decides_as_in_rsync(homes: tuple[Path, Path]) -> None:
    """An --include after the --exclude that matches comes too late, as in rsync (when
    every include won, f was compared)."""
    src, dst = homes
    rules = ("--exclude=f", "--include=*")
    assert _rsync_changes(src, dst, *rules) == []
    done = zverify("compare", "-q", *rules, str(src), str(dst))
    assert done.returncode == 0, done.stdout
    assert "filtered: 1 SRC and 1 DST entries left out" in done.stdout
    swapped = zverify("compare", "-q", *reversed(rules), str(src), str(dst))
    assert swapped.returncode == 1, swapped.stdout


@needs_installed_command
def test_l2_excluding_dir_triple_star_leaves_out_the_directory_too(
    homes: tuple[Path, Path],
) -> None:
    src, dst = homes
    assert not any("home" in line for line in _rsync_changes(src, dst, "--exclude=home/***"))
    done = zverify("compare", "--json", "--exclude=home/***", str(src), str(dst))
    assert done.returncode == 0, done.stdout
    doc = json.loads(done.stdout)
    assert doc["excluded"]["entries"] == {"src": 1, "dst": 1}  # home, once
    assert doc["sizes"]["src"]["entries"] == 2  # the root and other/: not home


@needs_installed_command
def test_l2_a_backslash_is_literal_in_a_pattern_without_wildcards(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    for name in ("back\\\\slash", "back\\slash"):  # two backslashes, one backslash
        write(src / name, b"1")
        write(dst / name, b"2")
        os.utime(dst / name, ns=(0, os.stat(src / name).st_mtime_ns))
    _same_times(src, dst)
    pattern = "--exclude=back\\\\slash"  # as typed in single quotes: two backslashes
    changed = _rsync_changes(src, dst, pattern)
    assert [line.split(" ", 1)[1] for line in changed] == ["back\\slash"]
    done = zverify("compare", "--json", pattern, str(src), str(dst))
    assert done.returncode == 1, done.stdout
    assert [d["path"] for d in json.loads(done.stdout)["differences"]] == ["back\\slash"]


@pytest.fixture
def newline_trees(tmp_path: Path) -> tuple[Path, Path]:
    """H1's trees: one file, named with a newline, different on each side."""
    src, dst = tmp_path / "a", tmp_path / "b"
    write(src / NEWLINE_NAME, b"x")
    write(dst / NEWLINE_NAME, b"y")
    os.utime(dst / NEWLINE_NAME, ns=(0, os.stat(src / NEWLINE_NAME).st_mtime_ns))
    _same_times(src, dst)
    return src, dst


@needs_installed_command
def test_h1_a_listed_path_in_neither_tree_is_exit_2_naming_it(
    newline_trees: tuple[Path, Path], tmp_path: Path
) -> None:
    src, dst = newline_trees
    listing = tmp_path / "list"
    listing.write_bytes(b"no-such-path\n")
    done = zverify("compare", "-q", "--files-from", str(listing), str(src), str(dst))
    assert done.returncode == 2, done.stdout
    assert "listed but in neither tree (no-such-path)" in done.stdout
    assert done.stderr.count("\n") == 1 and "in neither tree: 'no-such-path'" in done.stderr
    as_json = zverify("compare", "--json", "--files-from", str(listing), str(src), str(dst))
    assert as_json.returncode == 2
    excluded = json.loads(as_json.stdout)["excluded"]
    assert (excluded["not_found"], excluded["not_found_paths"]) == (1, ["no-such-path"])


@needs_installed_command
@pytest.mark.parametrize("fmt", ["native", "sha256sum", "b3sum", "mtree"])
def test_h1_a_manifest_of_a_list_naming_what_is_not_there_is_exit_2(
    newline_trees: tuple[Path, Path], tmp_path: Path, fmt: str
) -> None:
    """A checkfile made from such a list simply lacked the path, and `sha256sum -c` passed."""
    src, _ = newline_trees
    write(src / "here", b"h")
    listing = tmp_path / "list"
    listing.write_bytes(b"here\nno-such-path\n")
    out = tmp_path / f"m.{fmt}"
    done = zverify(
        "manifest", "--format", fmt, "--files-from", str(listing), str(src), "-o", str(out)
    )
    assert done.returncode == 2, done.stderr
    assert "1 listed path(s) not in the tree: 'no-such-path'" in done.stderr


@needs_installed_command
def test_h1_a_listed_path_found_on_one_side_only_is_a_difference(
    newline_trees: tuple[Path, Path], tmp_path: Path
) -> None:
    src, dst = newline_trees
    write(src / "only-here", b"z")
    listing = tmp_path / "list"
    listing.write_bytes(b"only-here\n")
    done = zverify("compare", "--json", "--files-from", str(listing), str(src), str(dst))
    assert done.returncode == 1, done.stdout
    doc = json.loads(done.stdout)
    assert ("only-here", "missing") in [(d["path"], d["kind"]) for d in doc["differences"]]
    assert doc["excluded"]["not_found"] == 0


@needs_installed_command
def test_h1_write_lists_refuses_a_name_it_cannot_write_as_one_line(
    newline_trees: tuple[Path, Path], tmp_path: Path
) -> None:
    src, dst = newline_trees
    lists = tmp_path / "L"
    done = zverify("compare", "-q", "--write-lists", str(lists), str(src), str(dst))
    assert done.returncode == 2, done.stdout
    assert done.stderr.count("\n") == 1 and "'new\\nline' holds a newline" in done.stderr
    assert b"new\nline" not in (lists / "differ").read_bytes()  # nothing ambiguous written
    nul = tmp_path / "L0"
    done = zverify("compare", "-q", "--from0", "--write-lists", str(nul), str(src), str(dst))
    assert done.returncode == 1
    assert (nul / "differ").read_bytes() == b"new\nline\0"
    again = zverify(
        "compare", "-q", "--from0", "--files-from", str(nul / "differ"), str(src), str(dst)
    )
    assert again.returncode == 1, again.stdout  # the round trip finds the difference again


@needs_installed_command
def test_l3_from0_applies_to_exclude_from(homes: tuple[Path, Path], tmp_path: Path) -> None:
    src, dst = homes
    rules = tmp_path / "rules0"
    rules.write_bytes(b"# a comment, as rsync skips it\0+ home/***\0- *\0")
    options = ["--from0", f"--exclude-from={rules}"]
    assert any(line.endswith(" home/u/f") for line in _rsync_changes(src, dst, *options))
    done = zverify("compare", "--json", *options, str(src), str(dst))
    assert done.returncode == 1, done.stdout
    assert json.loads(done.stdout)["excluded"]["patterns"] == ["+ home/***", "- *"]


@needs_installed_command
@pytest.mark.parametrize("rule", ["-s home", "-,s home", ". rules", "!home", "-C"])
def test_filter_rule_syntax_is_a_usage_error_naming_it(homes: tuple[Path, Path], rule: str) -> None:
    src, dst = homes
    done = zverify("compare", "-q", f"--exclude={rule}", str(src), str(dst))
    assert done.returncode == 2, done.stdout
    assert done.stderr.count("\n") == 1 and repr(rule) in done.stderr, done.stderr


def test_a_manifest_header_of_the_include_wins_days_reads_the_same() -> None:
    """Headers written before first-match order have no "order": their includes are put
    first (the same decisions); a pattern whose meaning changed since is refused."""
    old = {"rules": [["-", "*.tmp"], ["+", "keep.tmp"]], "listed": None}
    f = Filter.from_json(old, "m")
    assert f.patterns() == ["+ keep.tmp", "- *.tmp"]
    compiled = f.compiled()
    assert compiled is not None and not compiled.excludes(b"keep.tmp", False)
    assert Filter.from_json(f.to_json(), "m") == Filter(f.rules, None, "m")
    for changed in (b"home/***", b"a\\b", b"**/z", b"[[:alpha:]]"):
        with pytest.raises(ValueError, match="older zverify"):
            Filter.from_json({"rules": [["-", escape(changed)]], "listed": None}, "m")
    with pytest.raises(ValueError, match="rule"):
        Filter.from_json({"rules": [["x", "a"]], "listed": None}, "m")
