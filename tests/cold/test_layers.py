"""The cold package's imports go one way: no loop between its modules, and no import inside a
function to hide one (aesthetics review 3, change 4)."""

import ast
import subprocess
import sys
from pathlib import Path

import zverify.cold

COLD = Path(zverify.cold.__file__).parent


def _unit(module: str) -> str:
    """zverify.cold.store.s3 -> store.s3; a name imported from a package that is no module
    of it (from zverify.cold.store import LocalStore) is the package's: store."""
    parts = module.split(".")[2:]
    while parts and not (
        COLD.joinpath(*parts[:-1], parts[-1] + ".py").exists() or (COLD.joinpath(*parts).is_dir())
    ):
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.Module) -> set[str]:
    """The cold modules a module imports (from zverify.cold[.room] import x, zverify.cold.x)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("zverify.cold"):
            found |= {_unit(f"{node.module}.{alias.name}") for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {_unit(a.name) for a in node.names if a.name.startswith("zverify.cold.")}
    return found - {""}


def _modules() -> list[Path]:
    return sorted(COLD.rglob("*.py"))


def _name(path: Path) -> str:
    """store/s3.py -> store.s3; store/__init__.py -> store."""
    parts = path.relative_to(COLD).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    return {_name(p): _imports(ast.parse(p.read_text())) - {_name(p)} for p in _modules()}


# boto3 costs ~0.3 s of start-up: the store of an s3:// URL is imported only when asked for
LAZY = {("store/__init__.py", "open_store")}


def test_no_import_inside_a_function() -> None:
    inside = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            lazy = (str(path.relative_to(COLD)), getattr(node, "name", "")) in LAZY
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not lazy:
                inside += [
                    f"{path.name}:{inner.lineno}"
                    for inner in ast.walk(node)
                    if isinstance(inner, ast.Import | ast.ImportFrom)
                ]
    assert inside == []


def test_no_import_loop() -> None:
    graph = _graph()
    assert len(graph) > 10  # the package was found and read
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        for other in sorted(graph.get(module, ())):
            assert other not in path, f"import loop: {' -> '.join([*path, other])}"
            if other not in done:
                visit(other, [*path, other])
        done.add(module)

    for module in sorted(graph):
        visit(module, [module])


def test_the_rooms_stand_on_what_is_below_them() -> None:
    """store/ (where the files are) knows only names and entries of the rest of cold/;
    proof/ (what proves an archive) stands on store/ and the file formats beside streams,
    never on the commands above it (aesthetics review 4, change 1)."""
    graph = _graph()
    room = lambda unit: unit.split(".")[0]  # noqa: E731
    store_uses = {u for m, used in graph.items() if room(m) == "store" for u in used}
    assert {room(u) for u in store_uses} <= {"store", "names", "entries"}, store_uses
    proof_uses = {u for m, used in graph.items() if room(m) == "proof" for u in used}
    below = {"store", "proof", "names", "entries", "sidecar", "parity", "contents"}
    assert {room(u) for u in proof_uses} <= below, proof_uses


def test_zfs_only_through_typed_verbs() -> None:
    """cold/ reaches ZFS through zverify.zfs.ops (and inventory's readers): no argv, no
    libzfs_core arguments, no exit status of its own (aesthetics review 3, change 5)."""
    raw = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "zverify.zfs":
                raw += [
                    f"{path.name}: {a.name}" for a in node.names if a.name in ("command", "lzc")
                ]
            elif isinstance(node, ast.ImportFrom) and node.module in (
                "zverify.zfs.command",
                "zverify.zfs.lzc",
            ):
                raw.append(f"{path.name}: {node.module}")
    assert raw == []


def _is_int(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def test_exit_codes_only_through_the_one_rule() -> None:
    """cli/cold.py and report/cold/ neither return nor compare a literal exit code: each
    result's exit_code comes from zverify.exitcodes (aesthetics review 3, change 2)."""
    root = COLD.parent
    literal = []
    for path in (root / "cli" / "cold.py", *sorted((root / "report" / "cold").glob("*.py"))):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Return) and _is_int(node.value):
                literal.append(f"{path.name}:{node.lineno} returns a literal")
            elif isinstance(node, ast.Compare) and "exit_code" in ast.unparse(node):
                numbers = [c for c in node.comparators if _is_int(c)]
                literal += [f"{path.name}:{node.lineno} compares with a literal" for _ in numbers]
    assert literal == []


def test_a_directory_archive_never_loads_the_s3_extra(tmp_path) -> None:
    """boto3 costs ~0.3 s of start-up: only an s3:// URL may load it (cold/s3api.py)."""
    (tmp_path / "cold").mkdir()
    for args in (["check", "-q"], ["clean"], ["prune"]):
        r = subprocess.run(
            [
                sys.executable,
                "-X",
                "importtime",
                "-m",
                "zverify",
                "cold",
                *args,
                str(tmp_path / "cold"),
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert "zverify.cold.store" in r.stderr, r.stderr[-500:]  # the command did import
        loaded = [line for line in r.stderr.splitlines() if "boto" in line or "xxhash" in line]
        assert loaded == [], (args, loaded[:3])
