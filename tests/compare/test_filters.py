"""--exclude/--include/--exclude-from/--files-from: rsync's pattern rules (the first match
decides; test_filters_rsync.py holds them to rsync itself), pruned in the C walker (an
excluded directory is never opened), the same decision on a manifest side, and what was
left out always part of the verdict."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.cli.console import console_script, needs_installed_command, zverify
from tests.treebuilder import write
from zverify import _zvcore
from zverify.errors import UsageError
from zverify.filters import build

# (pattern, path, is_dir, excluded) — rsync's documented rules, one behaviour each.
CASES = [
    ("*.tmp", "a/b.tmp", False, True),  # no '/': the last component only, at any depth
    ("*.tmp", "a/b.tmpx", False, False),
    ("cache/", "x/cache", False, False),  # trailing '/': directories only
    ("cache/", "x/cache", True, True),
    ("/cache", "x/cache", True, False),  # leading '/': anchored at the root
    ("/cache", "cache", True, True),
    ("x/*", "x/y", False, True),  # a '/' inside: the whole path, or a tail after a '/'
    ("x/*", "a/x/y", False, True),
    ("x/*", "x/y/z", False, False),  # '*' stops at '/'...
    ("x/**", "x/y/z", False, True),  # ...'**' crosses it
    ("**/z", "a/b/z", False, True),
    ("a?c", "abc", False, True),
    ("a?c", "a/c", False, False),  # '?' never matches '/'
    ("[ab]x", "bx", False, True),
    ("[!ab]x", "bx", False, False),
    ("[!ab]x", "cx", False, True),
    ("lost+found", "lost+found", True, True),
    ("\\*", "*", False, True),  # a backslash quotes the next byte...
    ("\\*", "a", False, False),
    ("back\\slash", "back\\slash", False, True),  # ...only in a pattern with a wildcard
    ("back\\slash", "backslash", False, False),
    ("home/***", "home", True, True),  # '***': the directory itself and all below
    ("home/***", "home", False, False),
    ("home/***", "home/u/f", False, True),
    ("**/z", "z", False, True),  # a leading '**' also matches at the top
    ("[[:digit:]]x", "7x", False, True),
    ("[]a]", "]", False, True),
]


def excludes(*patterns: str) -> list[tuple[str, str]]:
    return [("--exclude", p) for p in patterns]


@pytest.mark.parametrize(("pattern", "path", "is_dir", "excluded"), CASES)
def test_pattern_rules(pattern: str, path: str, is_dir: bool, excluded: bool) -> None:
    compiled = build(excludes(pattern)).compiled()
    assert compiled is not None
    assert compiled.excludes(path.encode(), is_dir) is excluded


def _reference(pattern: str, path: str, is_dir: bool) -> bool:
    """rsync's rules as a regular expression, independently of the C matcher (for the
    pieces below: no backslash, so a pattern without wildcards needs no rule of its own)."""
    if pattern.endswith("/") and len(pattern) > 1:
        if not is_dir:
            return False
        pattern = pattern[:-1]
    anchored = pattern.startswith("/")
    whole = anchored or "/" in pattern or "**" in pattern
    if not anchored and pattern.startswith("**"):
        path, anchored = "/" + path, True  # as if the path began with '/'
    if pattern.endswith("***") and is_dir:
        path += "/"  # the directory itself, as if its path ended with '/'
    pattern = pattern[1:] if pattern.startswith("/") else pattern
    regex = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            regex += ".*"
            while i < len(pattern) and pattern[i] == "*":
                i += 1
            continue
        c = pattern[i]
        regex += {"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c))
        i += 1
    subject = path if whole else path.rsplit("/", 1)[-1]
    prefix = "" if anchored or not whole else "(?:.*/)?"
    return re.fullmatch(prefix + regex, subject, re.DOTALL) is not None


_PIECES = st.sampled_from(["a", "b", "/", "*", "**", "?", ".", "x"])
_NAMES = st.lists(st.sampled_from(["a", "b", "ab", "x.a", ".b", "ba", "a*"]), min_size=1)


@settings(max_examples=600, deadline=None)
@given(
    pieces=st.lists(_PIECES, min_size=1, max_size=7),
    names=_NAMES,
    is_dir=st.booleans(),
)
def test_matcher_agrees_with_a_regex_reference(
    pieces: list[str], names: list[str], is_dir: bool
) -> None:
    pattern = "".join(pieces)
    if pattern.strip("/") == "":
        return  # "/" alone names the root: refused (tested below)
    path = "/".join(names)
    compiled = build(excludes(pattern)).compiled()
    assert compiled is not None
    assert compiled.excludes(path.encode(), is_dir) is _reference(pattern, path, is_dir), pattern


def test_the_first_matching_rule_decides() -> None:
    """rsync's order: an --include after the --exclude that matches comes too late."""
    keep_first = build([("--include", "keep.tmp"), ("--exclude", "*.tmp")]).compiled()
    exclude_first = build([("--exclude", "*.tmp"), ("--include", "keep.tmp")]).compiled()
    assert keep_first is not None and exclude_first is not None
    assert not keep_first.excludes(b"keep.tmp", False)
    assert keep_first.excludes(b"drop.tmp", False)
    assert exclude_first.excludes(b"keep.tmp", False)


def test_rule_prefixes_and_clear_as_rsync_reads_them() -> None:
    """'+ '/'- ' set the kind whatever the option; '!' forgets the rules before it."""
    f = build([("--exclude", "+ a"), ("--include", "- b"), ("--exclude", "c")])
    assert f.patterns() == ["+ a", "- b", "- c"]
    cleared = build([("--exclude", "a"), ("--include", "!"), ("--exclude", "b")])
    assert cleared.patterns() == ["- b"]


# a\\ alone: a name.  A '/' inside [...] is a separator to rsync (`[!/]` then needs two
# path components and never matches); read as a member it excluded every 1-letter name.
@pytest.mark.parametrize("bad", ["[ab", "a*\\", "/", "[[:nope:]]", "[!/]", "x[\\/]", "[.-/]"])
def test_a_bad_pattern_is_one_usage_error_naming_it(bad: str) -> None:
    with pytest.raises(UsageError, match=re.escape(repr(bad))):
        build(excludes("fine", bad))


@pytest.mark.parametrize(
    "syntax", ["-s a", "-,s a", "+! b", ". merge-file", ": .rsync-filter", "-C", "!foo", "-_x"]
)
def test_rsync_filter_rule_syntax_is_refused_not_guessed(syntax: str) -> None:
    with pytest.raises(UsageError, match=re.escape(repr(syntax))):
        build(excludes(syntax))
    for plain in (".hidden", "._*", "-name", "a b", "x_y"):  # ordinary names still are
        assert build(excludes(plain)).patterns() == [f"- {plain}"]


def test_files_from_keeps_listed_paths_what_is_below_and_the_way_there(tmp_path: Path) -> None:
    listing = tmp_path / "list"
    listing.write_bytes(b"./a/b\n/c\n\n")
    compiled = build(files_from=str(listing)).compiled()
    assert compiled is not None
    kept = {
        p: not compiled.excludes(p.encode(), True)
        for p in ("a", "a/b", "a/b/x", "a/c", "c", "d", "a-b")
    }
    assert kept == {
        "a": True,
        "a/b": True,
        "a/b/x": True,
        "a/c": False,
        "c": True,
        "d": False,
        "a-b": False,
    }


def test_an_empty_files_from_keeps_nothing_but_the_root(tmp_path: Path) -> None:
    """As rsync: a list naming no path selects nothing; it never means "everything"."""
    listing = tmp_path / "empty"
    listing.write_bytes(b"\n\n")
    compiled = build(files_from=str(listing)).compiled()
    assert compiled is not None
    assert compiled.excludes(b"a", True) and compiled.excludes(b"b/c", False)
    assert not compiled.excludes(b"", True)


def test_files_from_with_from0_and_bad_lines(tmp_path: Path) -> None:
    listing = tmp_path / "list0"
    listing.write_bytes(b"new\nline\0other\0")
    compiled = build(files_from=str(listing), from0=True).compiled()
    assert compiled is not None
    assert not compiled.excludes(b"new\nline", False)
    bad = tmp_path / "bad"
    bad.write_bytes(b"ok\n../escape\n")
    with pytest.raises(UsageError, match="line 2"):
        build(files_from=str(bad))
    with pytest.raises(UsageError, match="no-such-file"):
        build(files_from=str(tmp_path / "no-such-file"))


def test_exclude_from_file_takes_rsync_prefixes_and_comments(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.write_bytes(b"# caches\n; also a comment\n\n+ keep.log\n- *.log\ntmp/\n")
    f = build([("--exclude-from", str(rules))])
    assert f.patterns() == ["+ keep.log", "- *.log", "- tmp/"]


# ---- through the installed command, on real trees ----


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    src, dst = tmp_path / "src", tmp_path / "dst"
    write(src / "data/a.txt", b"alpha\n")
    write(src / "data/cache/blob", b"cached\n")
    write(src / "scratch.tmp", b"t\n")
    write(src / ".zfs/snapshot/s1/a.txt", b"old\n")
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    (dst / "data/cache/blob").write_bytes(b"different\n")
    (dst / "scratch.tmp").write_bytes(b"other\n")
    shutil.rmtree(dst / ".zfs")
    for root in (src, dst):  # the edits above moved directory mtimes: put them back
        for d in ("data/cache", "data", ""):
            os.utime(root / d, ns=(0, 1_600_000_000 * 10**9))
    return src, dst


FILTERS = ["--exclude", "cache/", "--exclude", "*.tmp", "--exclude", "/.zfs"]


@needs_installed_command
def test_filters_hide_nothing_from_the_verdict(trees: tuple[Path, Path]) -> None:
    src, dst = trees
    unfiltered = zverify("compare", "--json", str(src), str(dst))
    assert unfiltered.returncode == 1
    done = zverify("compare", "--json", *FILTERS, str(src), str(dst))
    assert done.returncode == 0, done.stdout
    doc = json.loads(done.stdout)
    assert doc["identical"] is True
    assert doc["excluded"]["patterns"] == ["- cache/", "- *.tmp", "- /.zfs"]
    assert doc["excluded"]["entries"] == {"src": 3, "dst": 2}  # .zfs only in SRC
    text = zverify("compare", *FILTERS, str(src), str(dst))
    assert "filtered: 3 SRC and 2 DST entries left out" in text.stdout
    assert "filter: - cache/, - *.tmp, - /.zfs" in text.stdout


@needs_installed_command
def test_an_excluded_directory_is_never_opened(trees: tuple[Path, Path], tmp_path: Path) -> None:
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed (scripts/setup.sh installs it)")
    src, dst = trees
    log = tmp_path / "strace.log"
    subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=openat,open", "-o", str(log),
         console_script(), "compare", "--no-progress", *FILTERS, str(src), str(dst)],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    opened = log.read_text()
    assert '"data"' in opened or "/data" in opened  # the log does show the walk's opens
    for name in ('"cache"', '"blob"', '".zfs"', '"scratch.tmp"'):
        assert name not in opened


@needs_installed_command
def test_a_manifest_side_gets_the_same_filter(trees: tuple[Path, Path], tmp_path: Path) -> None:
    src, dst = trees
    whole = tmp_path / "whole.zvm"
    assert zverify("manifest", str(src), "-o", str(whole)).returncode == 0
    done = zverify("compare", "--json", *FILTERS, str(whole), str(dst))
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["excluded"]["entries"] == {"src": 3, "dst": 2}


@needs_installed_command
def test_a_manifest_written_with_filters_passes_them_on(
    trees: tuple[Path, Path], tmp_path: Path
) -> None:
    src, dst = trees
    narrowed = tmp_path / "narrowed.zvm"
    made = zverify("manifest", *FILTERS, str(src), "-o", str(narrowed))
    assert made.returncode == 0
    assert "3 entries left out by the filters" in made.stderr
    done = zverify("compare", "--json", str(narrowed), str(dst))
    assert done.returncode == 0, done.stdout
    doc = json.loads(done.stdout)
    assert doc["excluded"]["patterns"] == ["- cache/", "- *.tmp", "- /.zfs"]
    other = zverify("compare", "--exclude", "x", str(narrowed), str(dst))
    assert other.returncode == 2
    assert "was written with filters (- cache/; - *.tmp; - /.zfs)" in other.stderr


@needs_installed_command
def test_a_file_list_side_is_pruned_by_its_directories(
    trees: tuple[Path, Path], tmp_path: Path
) -> None:
    """hashdeep lists name no directories: a file below an excluded one is still left out."""
    hashdeep = shutil.which("hashdeep")
    if hashdeep is None:
        pytest.skip("hashdeep is not installed (scripts/setup.sh installs it)")
    src, dst = trees
    listing = tmp_path / "list.hashdeep"
    made = subprocess.run([hashdeep, "-r", "-l", "."], cwd=src, capture_output=True, check=True)
    listing.write_bytes(made.stdout)
    done = zverify("compare", "--json", "--profile", "content", *FILTERS, str(listing), str(dst))
    doc = json.loads(done.stdout)
    assert done.returncode == 0, doc["differences"]
    assert doc["excluded"]["entries"]["src"] == 3  # .zfs and data/cache only as ancestors


@needs_installed_command
def test_files_from_through_the_command(trees: tuple[Path, Path], tmp_path: Path) -> None:
    src, dst = trees
    listing = tmp_path / "list"
    listing.write_bytes(b"data/a.txt\n")
    done = zverify("compare", "--json", "--files-from", str(listing), str(src), str(dst))
    doc = json.loads(done.stdout)
    assert done.returncode == 0, doc["differences"]
    assert doc["excluded"]["files_from"] == str(listing)
    assert doc["excluded"]["listed"] == 1
    listing.write_bytes(b"")
    empty = zverify("compare", "--files-from", str(listing), str(src), str(dst))
    assert f"filter: --files-from '{listing}' (0 paths)" in empty.stdout
    bad = zverify("compare", "--exclude", "[oops", str(src), str(dst))
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "'[oops'" in bad.stderr


def test_c_filter_is_shared_by_threads_and_walks(tmp_path: Path) -> None:
    """One Filter object, two walks at once, then dropped: nothing dangles."""
    for i in range(50):
        write(tmp_path / f"d{i}/keep", b"k")
        write(tmp_path / f"d{i}/drop.tmp", b"d")
    compiled = build(excludes("*.tmp")).compiled()
    walks = [_zvcore.Walker(bytes(tmp_path), filter=compiled, threads=2) for _ in range(2)]
    del compiled
    for walker in walks:
        paths = [r.path for batch in walker for r in batch]
        assert len(paths) == 101 and not any(p.endswith(b".tmp") for p in paths)
        assert walker.counters()[2] == 50
