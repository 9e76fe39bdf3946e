"""Imports between zverify's packages go one way: down the layers below, never up, never
in a loop.

Every module under zverify/ is read with ast (no import is run), and every `import
zverify...` counts: at the top, under TYPE_CHECKING, or inside a function.  A unit is a
package (zverify/compare/) or a top-level module (zverify/walk.py); a unit may import
itself and any unit of a lower layer, nothing of its own layer or above.

Imports inside functions are allowed only in cli/ and __main__.py (start-up time: every
command loads the CLI, and `--help` must not pay for what one command needs) and where
ALLOWED_IN_FUNCTIONS says why: an optional dependency (mpi4py, par2, zstandard, lz4,
lzma), or a cost only one path should pay.  Never to hide an import loop: with this test,
a loop shows whether its import is at the top or not.
"""

import ast
from collections import defaultdict
from pathlib import Path

import zverify

PACKAGE = Path(zverify.__file__).resolve().parent

# Top to bottom.  docs: docs/ARCHITECTURE.md ("Every file's job") names each unit's job.
LAYERS: list[set[str]] = [
    {"__main__"},  # the console script: guards the import of everything else
    {"cli"},  # typer commands: parse, one call, render, exit code
    {"report", "certificate"},  # renderers of every result; certificates of some
    {"cutover", "drill"},  # `zverify cutover`, `cold drill`: both run a compare
    {"trees"},  # the compare orchestrator: opens the sides, drives the engine
    {"manifest", "mpi", "cold"},  # sources of a compare side; cold storage
    {"compare", "sendstream", "par2"},  # the engine; offline streams; par2 packets
    {"progress", "walk", "identity", "version", "schemas", "boundedjson", "provenance"},
    {"filters", "fsinfo", "hashing"},
    {"entry", "zfs", "pathnames", "suggest", "corefailure"},
    {"errors", "_zvcore"},
    {"exitcodes"},  # the one verdict rule: imports nothing of zverify
]

# (importing module, imported module) -> why the import is inside a function.
ALLOWED_IN_FUNCTIONS = {
    ("zverify.fsinfo", "ctypes"): "start-up: only a chroot without /proc needs statfs/capget",
    ("zverify.fsinfo", "zverify.zfs"): "start-up: only a tree on ZFS needs its properties",
    ("zverify.cold.store", "zverify.cold.store.s3"): "start-up: boto3 (~0.3 s) only for a "
    "bucket, never for a directory archive",
    ("zverify.hashing", "zverify._zvcore"): "start-up: check_xxh_setting runs before any "
    "command, and blake3_hasher is rare; the C core loads only when used",
    ("zverify.manifest.files", "zstandard"): "optional at run time: only .zst manifests",
    ("zverify.mpi.session", "mpi4py"): "optional dependency (zverify[mpi])",
    ("zverify.par2.tool", "par2.cli"): "optional dependency (zverify[parity])",
    ("zverify.progress", "tqdm"): "start-up: only when a bar is drawn",
    ("zverify.report.outputs", "tqdm"): "start-up: only when a bar shares stdout's terminal",
    ("zverify.sendstream.compressed", "lzma"): "optional: Python may be built without it",
    ("zverify.sendstream.compressed", "zstandard"): "only for zstd-compressed streams",
    ("zverify.sendstream.compressed", "lz4.frame"): "only for lz4-compressed streams",
    ("zverify.sendstream.digest", "lz4.block"): "only for lz4-compressed WRITE records",
    ("zverify.sendstream.digest", "zstandard"): "only for zstd-compressed WRITE records",
    ("zverify.trees.compare", "zverify.mpi.coordinator"): "only for --mpi: the CLI tells "
    "that an MPI job was started by zverify.mpi.session being loaded",
    ("zverify.trees.open", "zverify.manifest.open"): "start-up: two live trees never load "
    "the manifest readers (~20 ms)",
    ("zverify.trees.open", "zverify.manifest.read"): "start-up, as above",
    ("zverify.trees.open", "zverify.manifest.listing"): "start-up, as above",
    ("zverify.version", "zverify._zvcore"): "--version only",
    ("zverify.version", "zverify.zfs"): "--version only: compare never needs the ZFS side",
    ("zverify.zfs.command", "tempfile"): "start-up: only mounting a snapshot needs it",
}
FUNCTION_LEVEL_FREE = ("zverify.cli", "zverify.__main__")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _unit(module: str) -> str:
    return module.split(".")[1]


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for every absolute import in path."""
    tree = ast.parse(path.read_text(), str(path))
    in_function: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            in_function.update(id(inner) for inner in ast.walk(node) if inner is not node)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from zverify import _zvcore` imports the submodule zverify._zvcore
            names = [node.module]
            if node.module == "zverify":
                names = [f"zverify.{a.name}" for a in node.names if _is_submodule(a.name)]
        else:
            assert not isinstance(node, ast.ImportFrom), f"{path}:{node.lineno}: relative import"
            continue
        found += [(name, node.lineno, id(node) in in_function) for name in names]
    return found


def _is_submodule(name: str) -> bool:
    """Not an attribute of the package itself (`from zverify import __version__`)."""
    return name == "_zvcore" or (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").exists()


def _all_imports() -> dict[str, list[tuple[str, int, bool]]]:
    modules = {_module_name(p): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}
    assert len(modules) > 90, "the walk found too few modules: is PACKAGE right?"
    return modules


def _layer_of() -> dict[str, int]:
    return {unit: n for n, layer in enumerate(LAYERS) for unit in layer}


def _graph(modules: dict[str, list[tuple[str, int, bool]]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for module, imports in modules.items():
        for name, _, _ in imports:
            if name.startswith("zverify.") and _unit(name) != _unit(module):
                graph[_unit(module)].add(_unit(name))
    return graph


def test_every_unit_has_a_layer() -> None:
    units = {_unit(m) for m in _all_imports() if m != "zverify"} | {"_zvcore"}
    assert units == set(_layer_of()), "add the new unit to LAYERS (or drop a gone one)"


def test_imports_go_down_the_layers() -> None:
    layer = _layer_of()
    upward = [
        f"{module}:{line} imports {name} ({_unit(module)} may not import {_unit(name)})"
        for module, imports in _all_imports().items()
        if module != "zverify"  # the lazy map of the public API names the packages
        for name, line, _ in imports
        if name.startswith("zverify.")
        and _unit(name) != _unit(module)
        and layer[_unit(name)] <= layer[_unit(module)]
    ]
    assert upward == []


def test_no_loop_between_units() -> None:
    graph = _graph(_all_imports())
    loops = []
    for start in sorted(graph):
        seen, todo = set(), list(graph[start])
        while todo:
            unit = todo.pop()
            if unit == start:
                loops.append(start)
                break
            if unit not in seen:
                seen.add(unit)
                todo += graph.get(unit, ())
    assert loops == [], f"these units reach themselves through others: {loops}"


def test_imports_inside_functions_only_where_allowed() -> None:
    used = set()
    stray = []
    for module, imports in _all_imports().items():
        if module.startswith(FUNCTION_LEVEL_FREE):
            continue
        for name, line, inside in imports:
            if not inside:
                continue
            key = next(
                (k for k in ALLOWED_IN_FUNCTIONS if k[0] == module and name.startswith(k[1])),
                None,
            )
            if key is None:
                stray.append(f"{module}:{line} imports {name} inside a function")
            used.add(key)
    assert stray == []
    assert set(ALLOWED_IN_FUNCTIONS) - used == set(), "an allowance nothing uses any more"


def test_the_walk_sees_what_it_checks() -> None:
    """The checks above are only as good as the walk: it must see an import inside a
    function and an upward import at the top (the CLI has both)."""
    modules = _all_imports()
    assert ("zverify.trees.compare", True) in {
        (name, inside) for name, _, inside in modules["zverify.cli.compare"]
    }
    assert "trees" in _graph(modules)["cutover"]
