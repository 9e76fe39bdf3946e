"""The maps a newcomer reads first tell the truth about the tree.

The map of every file's job (docs/ARCHITECTURE.md, "Every file's job") is written by hand (each
line says what a file is *for*, which no generator can know); this test keeps it honest instead:
every package under zverify/ and every C file under native/ has a line, a package's line names
each of its modules, and every line names a file that exists.  Every relative link in README.md
and docs/ leads to a file.
"""

import ast
import re
from pathlib import Path

from tests.test_import_direction import LAYERS

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
ARCHITECTURE = REPO / "docs" / "ARCHITECTURE.md"
MAP_HEADING = "\n## Every file's job\n"

# A map line: its name starts in column 0 (a top folder) or 2 (inside the last top folder).
MAP_LINE = re.compile(r"^( {0,2})(\S+)")


def _map_block() -> list[str]:
    section = ARCHITECTURE.read_text().split(MAP_HEADING, 1)[1]
    return section.split("```\n", 2)[1].splitlines()


def map_lines() -> dict[str, str]:
    """Each path the map names, relative to the repository, with its line's text."""
    lines: dict[str, str] = {}
    top = path = ""
    for line in _map_block():
        match = MAP_LINE.match(line)
        if match is None:  # a description carried on to the next line
            lines[path] += " " + line.strip()
            continue
        indent, name = match.groups()
        if not indent:
            top = ""
        path = top + name
        if not indent:
            top = name
        lines[path] = line[match.end() :].strip()
    return lines


def readme_map() -> list[str]:
    """Every path the map names, relative to the repository."""
    return list(map_lines())


def test_the_map_is_found() -> None:
    """The parser must see the block (or every check below passes on nothing)."""
    named = readme_map()
    assert "zverify/" in named and "zverify/exitcodes.py" in named and len(named) > 20


def test_every_path_the_map_names_exists() -> None:
    missing = [path for path in readme_map() if not (REPO / path).exists()]
    assert missing == [], "the map in docs/ARCHITECTURE.md names what is not in the tree"


def test_every_package_is_on_the_map() -> None:
    packages = {f"zverify/{p.parent.name}/" for p in (REPO / "zverify").glob("*/__init__.py")}
    assert len(packages) > 10
    assert packages - set(readme_map()) == set(), "add the package to the map"


def _modules_of(package: Path) -> set[str]:
    """The modules and subpackages a package's line must name: a/b.py is b, a/store/ is store."""
    names = {p.stem for p in package.rglob("*.py") if p.name != "__init__.py"}
    return names | {p.parent.name for p in package.rglob("*/__init__.py")}


def test_a_package_line_names_each_of_its_modules() -> None:
    unnamed = []
    for path, text in map_lines().items():
        if not (path.startswith("zverify/") and path.endswith("/") and path.count("/") == 2):
            continue
        words = set(re.findall(r"[\w]+", text))
        unnamed += [f"{path}{m}" for m in sorted(_modules_of(REPO / path) - words)]
    assert unnamed == [], "name each module on its package's line in the map"


def test_every_c_file_is_on_the_map() -> None:
    c_files = {
        str(p.relative_to(REPO))
        for folder in ("src", "py", "include")
        for p in (REPO / "native" / folder).glob("*.[ch]")
    }
    assert len(c_files) > 15
    assert c_files - set(readme_map()) == set(), "add the C file to the map"


# A file path as docstrings and C headers spell one: a/b.py, zv_x.c, tests/cold/, docs/x.md.
PATH = re.compile(
    r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.(?:py|c|h|md)(?!\w)"
    r"|(?:tests|docs|tools|scripts|bench)/[\w/.-]*\w/?"
    r"|[\w-]+/(?=[\s,;:)]|\.\s))"  # a folder: cold/, mpi/
)
DOTTED = re.compile(r"\bzverify(?:\.\w+)+")
# Files and folders of other projects that comments cite, with where they live.
OUTSIDE = {
    "md5sum.c": "GNU coreutils",
    "include/sys/zfs_ioctl.h": "OpenZFS",
    "module/zfs/dmu_recv.c": "OpenZFS",
    "module/zfs/dmu_send.c": "OpenZFS",
    "lib/libzfs/libzfs_sendrecv.c": "OpenZFS",
    "xxhash.h": "Debian's libxxhash-dev",
    "data/": "a BagIt bag's payload folder (RFC 8493)",
}
# Where a name in a docstring may be relative to, besides its own folder.
BASES = ("", "zverify", "native", "native/src", "native/include", "native/py")


def _docstrings() -> list[tuple[Path, str]]:
    """Each Python module's docstring and each C file's opening comment."""
    found = [
        (p, ast.get_docstring(ast.parse(p.read_text())) or "")
        for p in sorted((REPO / "zverify").rglob("*.py"))
    ]
    for p in sorted((REPO / "native").rglob("*.[ch]")):
        opening = re.match(r"/\*.*?\*/", p.read_text(), re.S)
        found.append((p, opening.group(0) if opening else ""))
    return found


def _is_module(dotted: str) -> bool:
    """zverify.a.b names a module, or an attribute of one."""
    parts = dotted.split(".")[1:]
    if parts[0] == "_zvcore":
        return True
    for end in range(len(parts), 0, -1):
        base = REPO / "zverify" / Path(*parts[:end])
        if base.with_suffix(".py").exists() or (base / "__init__.py").exists():
            return True
    return False


def test_paths_in_docstrings_and_headers_exist() -> None:
    stale, seen = [], 0
    for path, text in _docstrings():
        where = path.relative_to(REPO)
        for name in PATH.findall(text):
            seen += 1
            bases = [path.parent, *(REPO / b for b in BASES)]
            if name not in OUTSIDE and not any((b / name).exists() for b in bases):
                stale.append(f"{where} names {name}")
        stale += [f"{where} names {d}" for d in DOTTED.findall(text) if not _is_module(d)]
    assert seen > 50, "the pattern found too few paths to be checking anything"
    assert stale == []


# A file longer than this holds one job too many, unless its docstring (or a C file's
# opening comment) has a line starting with LONG_BECAUSE that says why it should not be split.
MAX_LINES = 500
LONG_BECAUSE = "Long because:"


def _says_why_long(text: str) -> bool:
    lines = (line.strip().lstrip("*").strip() for line in text.splitlines())
    return any(line.startswith(LONG_BECAUSE) for line in lines)


def test_long_files_say_why() -> None:
    files = _docstrings()
    assert len(files) > 100, "the file list is too short to be the whole tree"
    silent = [
        str(path.relative_to(REPO))
        for path, text in files
        if len(path.read_text().splitlines()) > MAX_LINES and not _says_why_long(text)
    ]
    assert silent == [], f"over {MAX_LINES} lines: split it, or add a '{LONG_BECAUSE}' line"


def test_the_reason_is_found_in_both_languages() -> None:
    assert _says_why_long("A module.\n\nLong because: one class.")
    assert _says_why_long("/*\n * zv_x.c — a file.\n *\n * Long because: one loop.\n */")
    assert not _says_why_long("A module that is long because of nothing said.")


LAYER_LINE = re.compile(r"^\d+\. (`[\w_]+`(?:, `[\w_]+`)*)")


def architecture_layers() -> list[set[str]]:
    """The numbered list under '## Layers': each item's leading `unit`, `unit` names."""
    section = ARCHITECTURE.read_text().split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    matches = (LAYER_LINE.match(line) for line in section.splitlines())
    return [set(re.findall(r"`([\w_]+)`", m.group(1))) for m in matches if m]


def test_the_architecture_page_lists_the_layers_the_import_test_holds() -> None:
    assert architecture_layers() == LAYERS


def test_the_readme_links_the_architecture_page() -> None:
    assert "(docs/ARCHITECTURE.md)" in README.read_text()


# A markdown link's target: ](path) or ](path#anchor); outside code spans and blocks is
# not told apart, as no code in these pages holds a "](".
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _markdown_pages() -> list[Path]:
    return [README, *sorted((REPO / "docs").rglob("*.md"))]


def test_every_relative_link_leads_to_a_file() -> None:
    broken, seen = [], 0
    for page in _markdown_pages():
        for target in LINK.findall(page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            seen += 1
            path = target.split("#", 1)[0]
            if path and not (page.parent / path).exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert seen > 30, "the pattern found too few links to be checking anything"
    assert broken == []
