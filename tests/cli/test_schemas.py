"""Every JSON document the CLI prints against its JSON Schema, as the installed
`zverify schema NAME` prints it, and every document's "producer" (zverify.provenance).

The documents are real: each test runs a command (the installed console script for
`compare`, the in-process runner of tests/cli/console.py for the rest) on real trees, real
`zfs send` fixture streams and archives, and a stand-in `zfs` where ZFS itself would be
needed.  The schemas close every document (additionalProperties / unevaluatedProperties
false), so a key added, renamed or removed in a renderer fails here until the schema file
is updated with it.  Each test declares the schema files it exercises (@exercises) and must
validate at least one document against each of them; every schema file must be declared by
some test, so none goes stale untested; and every --json/--jsonl option of every command
must have a schema, so that no command gains a JSON output nobody described.
"""

import copy
import datetime
import json
import os
import shutil
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import typer
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry, Resource

from tests.cli.console import needs_installed_command, zverify, zverify_in_process
from tests.cli.producer import check_producer
from tests.cold import fakezfs
from tests.manifest.helpers import edited_manifest
from tests.sendstream.streamgen import resume_token
from tests.treebuilder import write
from zverify import certificate as certificates
from zverify import provenance, schemas
from zverify.cli import app
from zverify.cold.operations import LockedChains, Pruned
from zverify.cold.proof.check import ArchiveReport, FileReport, Problem
from zverify.cold.prune import blocked, plan_prune
from zverify.cold.store import lock
from zverify.report import compare_json as json_report
from zverify.report import consolidate as consolidate_report
from zverify.report import cutover as cutover_report
from zverify.report import drill as drill_report
from zverify.report import stream as stream_report
from zverify.report.cold import changes as cold_report
from zverify.report.cold import check as check_report
from zverify.report.cold import scrub as scrub_report
from zverify.sendstream.chain import ArchivedFile, Step, chains, plan

REPO = Path(__file__).resolve().parents[2]
STREAMS = REPO / "tests" / "data" / "streams"
INDEX = json.loads((STREAMS / "index.json").read_text())
CUTOVER_STANDIN = REPO / "tests" / "cutover" / "standin_zfs.py"


def _installed_schemas() -> dict[str, Any]:
    """{NAME: schema} from the installed `zverify schema` (which lists the names) and
    `zverify schema NAME`; in-process under scripts/asan.sh, whose installed command is
    another build."""
    if os.environ.get("ZVERIFY_SANITIZE") == "1":
        return {name: json.loads(schemas.text(name)) for name in schemas.names()}
    listed = zverify("schema")
    assert listed.returncode == 0 and listed.stdout, listed.stderr
    found = {}
    for name in listed.stdout.splitlines():
        printed = zverify("schema", name)
        assert printed.returncode == 0, printed.stderr
        found[name] = json.loads(printed.stdout)
    return found


SCHEMAS = _installed_schemas()
REGISTRY: Registry = Registry().with_resources(
    (doc["$id"], Resource.from_contents(doc)) for doc in SCHEMAS.values()
)

# The version string each schema file pins, and the constant the renderer writes.
CONSTANTS = {
    "compare": json_report.SCHEMA,
    "compare-lines": json_report.LINES_SCHEMA,
    "cutover": cutover_report.SCHEMA,
    "stream-verify": stream_report.VERIFY_SCHEMA,
    "stream-info": stream_report.INFO_SCHEMA,
    "stream-token": stream_report.TOKEN_SCHEMA,
    "cold-check": check_report.CHECK_SCHEMA,
    "cold-check-lines": check_report.LINES_SCHEMA,
    "cold-send": cold_report.SEND_SCHEMA,
    "cold-restore": cold_report.RESTORE_SCHEMA,
    "cold-prune": cold_report.PRUNE_SCHEMA,
    "cold-clean": cold_report.CLEAN_SCHEMA,
    "cold-parity": cold_report.PARITY_SCHEMA,
    "cold-repair": cold_report.REPAIR_SCHEMA,
    "cold-lock": cold_report.LOCK_SCHEMA,
    "cold-scrub": scrub_report.SCHEMA,
    "cold-consolidate": consolidate_report.CONSOLIDATE_SCHEMA,
    "cold-digest": consolidate_report.DIGEST_SCHEMA,
    "cold-drill": drill_report.SCHEMA,
    "certificate": certificates.SCHEMA,
}

EXERCISED: dict[str, list[str]] = {}  # schema file -> the tests that declare it
_validated: set[str] = set()  # schema files validated against during the current test
Test = TypeVar("Test", bound=Callable[..., None])


def exercises(*names: str) -> Callable[[Test], Test]:
    def declare(test: Test) -> Test:
        for name in names:
            EXERCISED.setdefault(name, []).append(test.__name__)
        test.schemas = names  # type: ignore[attr-defined]
        return test

    return declare


@pytest.fixture(autouse=True)
def _declared_schemas_are_validated(request: pytest.FixtureRequest) -> Iterator[None]:
    _validated.clear()
    yield
    missing = set(getattr(request.function, "schemas", ())) - _validated
    assert not missing, f"{request.function.__name__} validated nothing against {missing}"


def validate(name: str, doc: Any) -> None:
    """doc is valid under `zverify schema NAME`, and would not be with one more top-level key."""
    validator = Draft202012Validator(SCHEMAS[name], registry=REGISTRY)
    error = best_match(validator.iter_errors(doc))
    assert error is None, f"{name}: at {error.json_path}: {error.message}"
    assert isinstance(doc, dict)
    assert not validator.is_valid({**doc, "not_in_the_schema": 1}), f"{name} is not closed"
    _validated.add(name)


def validate_document(name: str, doc: Any) -> None:
    """A whole document: valid, its first key names its type and version, and it says which
    zverify made it, where and when."""
    validate(name, doc)
    assert next(iter(doc)) == "schema" and doc["schema"] == CONSTANTS[name]
    check_producer(doc[provenance.KEY])
    without = {key: value for key, value in doc.items() if key != provenance.KEY}
    assert not Draft202012Validator(SCHEMAS[name], registry=REGISTRY).is_valid(without)


# -- the schema files themselves -------------------------------------------------------------


def _pinned(node: Any) -> set[str]:
    """Every value a schema pins its documents' "schema" key to (properties.schema.const)."""
    found: set[str] = set()
    if isinstance(node, dict):
        pinned = node.get("properties", {}).get("schema", {})
        if isinstance(pinned, dict) and "const" in pinned:
            found.add(pinned["const"])
        for value in node.values():
            found |= _pinned(value)
    elif isinstance(node, list):
        for value in node:
            found |= _pinned(value)
    return found


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_file_is_a_valid_2020_12_schema_pinning_its_constant(name: str) -> None:
    schema = SCHEMAS[name]
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith(f"/{name}.schema.json")
    assert schema["title"] and schema["description"]
    assert _pinned(schema) == {CONSTANTS[name]}


def test_every_schema_file_is_known_and_exercised() -> None:
    assert SCHEMAS, "`zverify schema` lists no schema"
    assert set(CONSTANTS) == set(SCHEMAS)
    assert set(EXERCISED) == set(SCHEMAS), "schema files no test validates real output against"
    assert len({s["$id"] for s in SCHEMAS.values()}) == len(SCHEMAS)


# Every option that makes a command print JSON, and the schema of what it prints.
JSON_OUTPUTS = {
    ("compare", "--json"): "compare",
    ("compare", "--jsonl"): "compare-lines",
    ("cutover", "--json"): "cutover",
    ("stream verify", "--json"): "stream-verify",
    ("stream info", "--json"): "stream-info",
    ("stream token", "--json"): "stream-token",
    ("cold check", "--json"): "cold-check",
    ("cold check", "--jsonl"): "cold-check-lines",
    ("cold send", "--json"): "cold-send",
    ("cold restore", "--json"): "cold-restore",
    ("cold prune", "--json"): "cold-prune",
    ("cold clean", "--json"): "cold-clean",
    ("cold parity", "--json"): "cold-parity",
    ("cold repair", "--json"): "cold-repair",
    ("cold lock", "--json"): "cold-lock",
    ("cold scrub", "--json"): "cold-scrub",
    ("cold consolidate", "--json"): "cold-consolidate",
    ("cold digest", "--json"): "cold-digest",
    ("cold drill", "--json"): "cold-drill",
}


def _json_options(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """(command path, option) for every option naming JSON, in every command click knows
    (the lazy groups build each command when asked for it)."""
    ctx = command.context_class(command, info_name=path[-1] if path else "zverify")
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            yield from _json_options(command.get_command(ctx, name), (*path, name))
        return
    for param in command.params:
        for option in param.opts:
            if "json" in option.lower():
                yield " ".join(path), option


def test_every_json_option_of_every_command_has_a_schema() -> None:
    """A command that gains a JSON output fails here until JSON_OUTPUTS names its schema,
    which then must be installed and validated against real output (above)."""
    found = set(_json_options(typer.main.get_command(app)))
    assert found == set(JSON_OUTPUTS), "a --json option without a schema, or one gone"
    assert set(JSON_OUTPUTS.values()) | set(FILE_OUTPUTS) == set(SCHEMAS)


# documents written to a file rather than printed: no --json option names them
FILE_OUTPUTS = {"certificate": "--certificate FILE of cutover and cold drill"}


def _producers(node: Any) -> list[Any]:
    if isinstance(node, dict):
        own = [node["$defs"]["producer"]] if "producer" in node.get("$defs", {}) else []
        return own + [p for value in node.values() for p in _producers(value)]
    return [p for value in node for p in _producers(value)] if isinstance(node, list) else []


def test_every_schema_describes_the_one_producer_object() -> None:
    """The same object in every document (compare-lines' header has it without "finished";
    cold-check-lines' header refers to cold-check's)."""
    described = {name: _producers(schema) for name, schema in SCHEMAS.items()}
    lines = ("compare-lines", "cold-check-lines")
    assert all(len(found) == 1 for name, found in described.items() if name not in lines)
    assert not any(described[name] for name in lines)  # they use their document's
    first = described["compare"][0]
    assert all(found == [first] for name, found in described.items() if found)
    assert set(first["required"]) == {"tool", "version", "host", "started", "finished"}


# -- compare --json / --jsonl (the installed console script) ----------------------------------


def _compare(*args: str) -> subprocess.CompletedProcess[str]:
    return zverify("compare", "--no-progress", *args)


def _lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.fixture
def messy(tmp_path: Path) -> tuple[str, str]:
    """A copy with one difference of most kinds, some of them at paths (and a root) that are
    not UTF-8, so that every optional key of a difference and of the summary appears."""
    base = os.fsencode(tmp_path)
    src, dst = (Path(os.fsdecode(base + name)) for name in (b"/src-\xff", b"/dst"))
    write(src / "a-content", b"one")
    write(src / "b-mode", b"same")
    write(src / "gone/x", b"1")
    write(src / "gone/sub/y", b"2")
    write(Path(os.fsdecode(os.fsencode(src) + b"/bad-\xfe")), b"latin1")
    write(src / "linked", b"shared")
    os.link(src / "linked", Path(os.fsdecode(os.fsencode(src) + b"/linked-\xfd")))
    write(src / "retyped", b"a file")
    write(src / "skip.tmp", b"left out")
    os.symlink("target", src / "sym")
    subprocess.run(["cp", "-a", os.fsencode(src), os.fsencode(dst)], check=True)
    write(dst / "a-content", b"two")
    os.chmod(dst / "b-mode", 0o600)
    shutil.rmtree(dst / "gone")
    os.unlink(os.fsencode(dst) + b"/bad-\xfe")
    os.unlink(os.fsencode(dst) + b"/linked-\xfd")
    shutil.copy2(dst / "linked", os.fsencode(dst) + b"/linked-\xfd")
    os.unlink(dst / "retyped")
    (dst / "retyped").mkdir()
    os.unlink(dst / "sym")
    os.symlink(b"target-\xfc", os.fsencode(dst) + b"/sym")
    write(dst / "new", b"")
    return str(src), str(dst)


@needs_installed_command
@exercises("compare", "compare-lines")
def test_compare_documents_with_every_optional_key(messy: tuple[str, str]) -> None:
    src, dst = messy
    done = _compare("--json", "--exclude", "*.tmp", src, dst)
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    validate_document("compare", doc)
    keys = {k for d in doc["differences"] for k in d}
    assert {"path_escaped", "members", "members_escaped", "entries_below", "dst_escaped"} <= keys
    assert {d["kind"] for d in doc["differences"]} >= {
        "content", "mode", "missing", "extra", "hardlink", "type", "symlink",
    }  # fmt: skip
    assert doc["src_escaped"] is True and doc["excluded"]["entries"]["src"] == 1

    lines = _lines(_compare("--jsonl", "--exclude", "*.tmp", src, dst).stdout)
    for line in lines:
        validate("compare-lines", line)
    header, *differences, summary = lines
    assert header["type"] == "header" and header["src_escaped"] is True
    assert len(differences) == len(doc["differences"]) and summary["complete"] is True
    check_producer(header[provenance.KEY], finished=False)  # only the summary knows the end
    check_producer(summary[provenance.KEY])
    assert header[provenance.KEY]["started"] == summary[provenance.KEY]["started"]


@needs_installed_command
@exercises("compare", "compare-lines")
def test_compare_documents_with_moves(messy: tuple[str, str]) -> None:
    """--detect-moves: a file not named in UTF-8 moved to another such name."""
    src, dst = messy
    write(Path(os.fsdecode(os.fsencode(dst) + b"/moved-\xfc")), b"latin1")
    done = _compare("--json", "--detect-moves", src, dst)
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    validate_document("compare", doc)
    (move,) = [d for d in doc["differences"] if d["kind"] == "moved"]
    assert move["src_escaped"] is True and move["dst_escaped"] is True
    assert doc["counts"]["moved"] == 1
    for line in _lines(_compare("--jsonl", "--detect-moves", src, dst).stdout):
        validate("compare-lines", line)


@needs_installed_command
@exercises("compare", "compare-lines")
def test_compare_documents_of_an_identical_selection(
    messy: tuple[str, str], tmp_path: Path
) -> None:
    """No difference at all (an empty array), --quick, and a --files-from list."""
    listed = tmp_path / "list"
    listed.write_text("linked\nskip.tmp\n")
    args = ("--quick", "--ignore", "mtime", "--files-from", str(listed), *messy)
    done = _compare("--json", *args)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    validate_document("compare", doc)
    assert doc["differences"] == [] and doc["content_read"] is False
    assert doc["excluded"]["files_from"] == str(listed) and doc["excluded"]["listed"] == 2

    lines = _lines(_compare("--jsonl", *args).stdout)
    assert [line["type"] for line in lines] == ["header", "summary"]
    for line in lines:
        validate("compare-lines", line)


@needs_installed_command
@exercises("compare", "compare-lines")
def test_compare_documents_of_a_run_failing_part_way(tmp_path: Path) -> None:
    """An edited manifest: differences are reported before its trailer proves the edit."""
    src, manifest = edited_manifest(tmp_path)
    done = _compare("--json", str(manifest), str(src))
    assert done.returncode == 2
    doc = json.loads(done.stdout)
    validate_document("compare", doc)
    assert doc["complete"] is False and doc["differences"]
    assert not Draft202012Validator(SCHEMAS["compare"], registry=REGISTRY).is_valid(
        {**doc, "identical": False}
    ), "an aborted document must not carry a verdict"

    records = _lines(_compare("--jsonl", str(manifest), str(src)).stdout)
    for record in records:
        validate("compare-lines", record)
    assert records[-1]["type"] == "summary" and records[-1]["complete"] is False
    check_producer(records[-1][provenance.KEY])


# -- cutover --json (a stand-in zfs) ---------------------------------------------------------

FS = {"type": ["filesystem", "-"], "mounted": ["yes", "-"], "receive_resume_token": ["-", "-"]}
ENCRYPTED = {"encryption": ["aes-256-gcm", "-"], "keystatus": ["available", "-"]}
CUTOVER_STATE: dict[str, Any] = {
    "datasets": {
        "p": {**FS, "compression": ["lz4", "local"]},
        "p/a": {**FS, "compression": ["lz4", "inherited from p"], "org.x:tag": ["1", "local"]},
        "p/b": {**FS, "compression": ["lz4", "inherited from p"], **ENCRYPTED,
                "encryptionroot": ["p/b", "-"]},
        "p/gone": FS,
        "p/vol": {**FS, "type": ["volume", "-"]},
        "q": {**FS, "compression": ["lz4", "received"]},
        "q/a": {**FS, "compression": ["off", "inherited from q"],
                "receive_resume_token": ["1-abc-def-00", "-"]},
        "q/b": {**FS, "compression": ["lz4", "local"], **ENCRYPTED, "encryptionroot": ["q", "-"]},
        "q/vol": FS,
        "q/extra": FS,
    },
    "snapshots": {
        "p": [["s1", 11, 10, 0]],
        "q": [["s1", 11, 4, 0]],
        "p/a": [["s0", 100, 8, 0], ["s1", 111, 10, 1], ["s2", 222, 12, 0], ["s3", 333, 14, 0]],
        "q/a": [["old", 55, 3, 0], ["s1", 111, 4, 0], ["s2", 999, 5, 0]],
        "p/b": [["s1", 7, 10, 0]],
        "q/b": [["x", 8, 4, 0]],
    },
    "written": {"p@s1": 0, "q@s1": 0, "p/a@s1": 4096, "q/a@s1": 512, "q/a@s2": 512},
}  # fmt: skip


Run = Callable[..., tuple[int, Any]]


@pytest.fixture
def cli() -> Run:
    """zverify ARGV through the root handler, in-process (tests/cli/console.py): its exit
    code and its stdout parsed as one JSON document."""

    def run(*argv: str) -> tuple[int, Any]:
        done = zverify_in_process(*argv)
        return done.returncode, json.loads(done.stdout)

    return run


@pytest.fixture
def cutover(cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    """Run `zverify cutover --json ARGS` in-process against the stand-in zfs of
    tests/cutover/ in the given state; `zfs diff` answers with diff_lines (None: fails)."""
    bindir = tmp_path / "bin"
    calls = iter(range(1000))

    def run(state: dict[str, Any], *args: str, diff_lines: str | None = None) -> tuple[int, Any]:
        path = tmp_path / f"state{next(calls)}.json"
        path.write_text(json.dumps(state))
        monkeypatch.setenv("ZV_STANDIN_STATE", str(path))
        diff = f"[ \"$1\" = diff ] && printf '{diff_lines}' && exit 0\n" if diff_lines else ""
        shutil.rmtree(bindir, ignore_errors=True)
        fakezfs.install(
            monkeypatch, tmp_path, f'{diff}exec {sys.executable} {CUTOVER_STANDIN} "$@"\n'
        )
        (bindir / "zpool").write_text("#!/bin/sh\n")
        (bindir / "zpool").chmod(0o755)
        return cli("cutover", "--json", *args)

    return run


@exercises("cutover")
def test_cutover_documents(cutover: Run) -> None:
    code, doc = cutover(CUTOVER_STATE, "-r", "--explain", "p", "q", diff_lines=r"M\t/p/a/f\n")
    assert code == 1
    validate_document("cutover", doc)
    kinds = {f["kind"] for f in doc["findings"]}
    assert {"property-drift", "encryption", "guid-mismatch", "source-written"} <= kinds
    assert any("changes" in f for f in doc["findings"])
    assert None in {d["dst"] for d in doc["datasets"]}  # p/gone has no replica

    later = copy.deepcopy(CUTOVER_STATE)
    later["snapshot_later"] = {"p": [["s1", 11, 10, 0], ["s2", 12, 11, 0]]}
    del later["written"]["q/a@s1"]  # written@ unreadable on one side
    code, doc = cutover(later, "-r", "--explain", "p", "q")
    assert code == 2
    validate_document("cutover", doc)
    assert {"changed-during-check", "unreadable"} <= {f["kind"] for f in doc["findings"]}

    ready = {
        "datasets": {"p/a": FS, "q/a": FS},
        "snapshots": {"p/a": [["s1", 111, 10, 0]], "q/a": [["s1", 111, 4, 0]]},
        "written": {"p/a@s1": 0, "q/a@s1": 0},
    }
    code, doc = cutover(ready, "p/a", "q/a")
    assert code == 0
    validate_document("cutover", doc)
    assert doc["ready"] is True and doc["findings"] == []


# -- stream verify|info|token --json ---------------------------------------------------------


@pytest.fixture
def streams(tmp_path: Path) -> list[str]:
    """Every real fixture stream, one truncated, one with a flipped byte, one missing."""
    files = [str(STREAMS / e["file"]) for e in INDEX["streams"]]
    data = (STREAMS / "full_fs_s1.zstream").read_bytes()
    (tmp_path / "truncated").write_bytes(data[: len(data) // 3])
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 1
    (tmp_path / "flipped").write_bytes(bytes(flipped))
    return [*files, str(tmp_path / "truncated"), str(tmp_path / "flipped")]


@exercises("stream-verify")
def test_stream_verify_documents(cli: Run, streams: list[str], tmp_path: Path) -> None:
    intact = [str(STREAMS / "full_fs_s1.zstream"), str(STREAMS / "replicate_R_fs_s2.zstream")]
    code, doc = cli("stream", "verify", "--json", *intact)
    assert code == 0 and doc["valid"] is True
    validate_document("stream-verify", doc)

    code, doc = cli("stream", "verify", "--json", *streams, str(tmp_path / "missing"))
    assert code == 2 and len(doc["files"]) == len(streams) + 1
    validate_document("stream-verify", doc)
    problems = [p for f in doc["files"] for p in f["problems"]]
    assert {"truncated", "io"} <= {p["code"] for p in problems}
    assert any("span" in p for p in problems)


@exercises("stream-info")
def test_stream_info_documents(cli: Run, streams: list[str]) -> None:
    substreams, datasets = [], []
    for name in streams:
        code, doc = cli("stream", "info", "--json", name)
        validate_document("stream-info", doc)
        assert code == (0 if doc["valid"] else 1), name
        substreams += doc["substreams"]
        datasets += doc.get("datasets", [])
    assert datasets  # the -R package's header lists its datasets
    keys = {k for s in substreams for k in s}
    assert {"resume", "to_ivset_guid", "from_ivset_guid"} <= keys
    assert None in {s["stream_bytes"] for s in substreams}  # the truncated one has no END


@exercises("stream-token")
def test_stream_token_documents(cli: Run) -> None:
    tokens = [e["resume_token"] for e in INDEX["streams"] if e.get("resume_token")]
    assert tokens, "index.json holds no resume token"
    # and one with the boolean flags and big-endian checksum a real sender can write
    flags = {"toname": "p/f@s", "toguid": 2**64 - 2, "object": 3, "offset": 0, "embedok": True}
    for token in [*tokens, resume_token(flags, big=True)]:
        code, doc = cli("stream", "token", "--json", token)
        assert code == 0 and doc["valid"] is True
        validate_document("stream-token", doc)
    assert doc["fields"]["embedok"] is True and doc["checksum_order"] == "big"

    for bad in (tokens[0][:-4], "1-2-3", "9-0-0-00"):
        code, doc = cli("stream", "token", "--json", bad)
        assert code == 1 and doc["valid"] is False
        validate_document("stream-token", doc)


# -- cold check|send|prune --json ------------------------------------------------------------

FULL_S1 = "zv%2Ffs@s1.zfsfull"
INC_S1_S2 = "zv%2Ffs@s1-@s2.zfsinc"
INC_S2_S3 = "zv%2Ffs@s2-@s3.zfsinc"
PKG_S1_S3 = "zv%2Ffs@s1-@s3.zfsincstream"
GUIDS = {e["to"]: e["to_guid"] for e in INDEX["streams"] if e["dataset"] == "zv/fs"}


def _archive(root: Path, files: dict[str, str]) -> Path:
    """An archive directory: {name in the archive: fixture stream}."""
    root.mkdir()
    for name, fixture in files.items():
        shutil.copy(STREAMS / fixture, root / name)
    return root


@exercises("cold-check", "cold-check-lines")
def test_cold_check_documents(cli: Run, tmp_path: Path) -> None:
    intact = _archive(
        tmp_path / "intact",
        {
            FULL_S1: "full_fs_s1.zstream",
            INC_S1_S2: "incr_fs_s1_s2.zstream",
            INC_S2_S3: "incr_empty_fs_s2_s3.zstream",
            PKG_S1_S3: "package_I_fs_s1_s3.zstream",
            "zv%2Fenc@s1.zfsfull": "raw_w_enc_s1.zstream",
            "zv%2Fenc@s1-@s2.zfsinc": "raw_w_enc_s1_s2.zstream",
        },
    )
    code, doc = cli("cold", "check", "--json", str(intact))
    assert code == 0 and doc["valid"] is True
    validate_document("cold-check", doc)
    assert [d["dataset"] for d in doc["datasets"]] == ["zv/enc", "zv/fs"]

    messy = _archive(
        tmp_path / "messy",
        {
            FULL_S1: "full_fs_s1.zstream",
            "copy-of-s1": "compressed_c_fs_s1.zstream",  # a duplicate of @s1
            INC_S1_S2: "truncated_full_fs_s1.zstream",  # truncated, and not what it says
            INC_S2_S3: "incr_empty_fs_s2_s3.zstream",  # an orphan without @s1 -> @s2
            "zv%2Ffs@s7-@s9.zfsinc": "raw_w_enc_s1_s2.zstream",  # lies; zv/enc has no full
            "zv%2Ffs@s3-@s4.zfsinc.partial": "incr_empty_fs_s2_s3.zstream",
        },
    )
    damaged = bytearray((STREAMS / "raw_w_enc_s1.zstream").read_bytes())
    damaged[len(damaged) // 2] ^= 0x40
    (messy / "zv%2Fenc@s1.zfsfull").write_bytes(bytes(damaged))
    os.symlink("/etc/passwd", messy / "outside")
    (messy / f"{FULL_S1}.json").write_text(json.dumps({"bytes": 12}))
    (messy / "gone.zfsfull.json").write_text("{}")
    code, doc = cli("cold", "check", "--json", str(messy))
    assert code == 1 and doc["valid"] is False
    validate_document("cold-check", doc)
    problems = [p for f in doc["files"] for p in f["problems"]] + doc["problems"]
    problems += [p for d in doc["datasets"] for p in d["problems"]]
    assert {p["kind"] for p in problems} >= {
        "damaged", "truncated", "orphan", "duplicate", "name-mismatch", "partial",
        "not-a-stream", "sidecar-mismatch",
    }  # fmt: skip
    assert doc["problems"] and any("offset" in p for p in problems)

    lines = _lines(zverify_in_process("cold", "check", "--jsonl", str(messy)).stdout)
    for line in lines:
        validate("cold-check-lines", line)
    assert [lines[0]["type"], lines[-1]["type"]] == ["header", "summary"]
    assert lines[0]["schema"] == check_report.LINES_SCHEMA and lines[-1]["exit_code"] == 1
    kinds = {line["type"] for line in lines}
    assert kinds == {"header", "dataset", "snapshot", "file", "problem", "summary"}
    # the same facts as the document: a line per file and per restorable snapshot
    assert [line["file"] for line in lines if line["type"] == "file"] == doc["files"]
    snapshots = [line["snapshot"] for line in lines if line["type"] == "snapshot"]
    assert snapshots == [r for d in doc["datasets"] for r in d["restorable"]]

    # no full: the second incremental follows the first, which lost its base
    headless = _archive(
        tmp_path / "headless",
        {INC_S1_S2: "incr_fs_s1_s2.zstream", INC_S2_S3: "incr_empty_fs_s2_s3.zstream"},
    )
    code, doc = cli("cold", "check", "--json", str(headless))
    assert code == 1
    validate_document("cold-check", doc)
    [dataset] = doc["datasets"]
    assert [p.get("follows") for p in dataset["problems"]] == [None, INC_S1_S2]


@pytest.fixture
def source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[list[str]], None]:
    """A stand-in `zfs` for `cold send`: lists the given snapshots of zv/fs, sends the real
    fixture stream ending at the snapshot asked for; and a stand-in pyzfs for the bookmark
    or hold (libzfs_core calls are the other half of the ZFS boundary)."""
    fixtures = {"s1": "full_fs_s1.zstream", "s2": "incr_fs_s1_s2.zstream"}
    sends = "".join(f"  *@{s}) cat '{STREAMS / f}' ;;\n" for s, f in fixtures.items())
    fakezfs.install(
        monkeypatch,
        tmp_path,
        f'case "$1" in\nlist) cat "{tmp_path}/snapshots" ;;\nversion) echo zfs-2.1.11 ;;\n'
        f"send) for last; do :; done\n"
        f'  [ "$2" = -nvP ] && {{ printf "full\\t%s\\t4096\\nsize\\t4096\\n" "$last"; exit 0; }}\n'
        f' case "$last" in\n{sends} esac ;;\n'
        '*) echo "stand-in zfs: unexpected $*" >&2; exit 1 ;;\nesac\n',
    )
    lzc = types.ModuleType("libzfs_core")
    lzc.lzc_exists = lambda name: False  # type: ignore[attr-defined]
    lzc.lzc_bookmark = lambda bookmarks: None  # type: ignore[attr-defined]
    lzc.lzc_get_holds = lambda snapshot: {}  # type: ignore[attr-defined]
    lzc.lzc_hold = lambda holds: []  # type: ignore[attr-defined]
    lzc.lzc_release = lambda holds: []  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "libzfs_core", lzc)

    def snapshots(names: list[str]) -> None:
        rows = [f"zv/fs@{n}\t{GUIDS[f'zv/fs@{n}']}\t{10 + i}\n" for i, n in enumerate(names)]
        (tmp_path / "snapshots").write_text("".join(rows))

    return snapshots


@exercises("cold-send")
def test_cold_send_documents(cli: Run, source: Callable[[list[str]], None], tmp_path: Path) -> None:
    cold = tmp_path / "cold"
    cold.mkdir()
    source(["s1"])
    code, doc = cli("cold", "send", "--json", "zv/fs", str(cold))
    assert code == 0 and doc["sent"]["bookmark"] == "zv/fs#zverify-s1"
    validate_document("cold-send", doc)
    assert (cold / doc["sent"]["file"]).stat().st_size == doc["sent"]["bytes"]
    beside = json.loads((cold / f"{doc['sent']['file']}.json").read_text())  # the sidecar
    check_producer(beside[provenance.KEY])

    source(["s1", "s2"])
    code, doc = cli("cold", "send", "--json", "--hold", "zv/fs", str(cold))
    assert code == 0 and doc["sent"]["hold"] == "zv/fs@s2"
    validate_document("cold-send", doc)

    code, doc = cli("cold", "send", "--json", "zv/fs", str(cold))
    assert code == 0 and doc["sent"] is None and "already restorable" in doc["reason"]
    validate_document("cold-send", doc)

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    code, doc = cli("cold", "send", "--json", "--dry-run", "zv/fs", str(fresh))
    assert code == 0 and doc["dry_run"] is True and doc["sent"] is None
    validate_document("cold-send", doc)
    assert [p["estimated_bytes"] for p in doc["planned"]] == [4096]
    assert doc["planned"][0]["command"][:2] == ["zfs", "send"]
    assert set(os.listdir(fresh)) <= set(lock.FILES)  # nothing written but the lock files


PRUNE_FILES = {
    "zv%2Ffs@s1.zfsfull": "full_fs_s1.zstream",  # the old chain's full: it goes
    INC_S1_S2: "incr_fs_s1_s2.zstream",
    INC_S2_S3: "incr_empty_fs_s2_s3.zstream",
    "replicated-s2.zstream": "replicate_R_fs_s2.zstream",  # the new chain (and zv/fs/child)
}


@exercises("cold-prune")
def test_cold_prune_documents(cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _archive(tmp_path / "cold", PRUNE_FILES)
    code, doc = cli("cold", "prune", "--json", str(root))
    assert code == 0 and doc["dry_run"] is True
    validate_document("cold-prune", doc)
    (fs,) = [d for d in doc["datasets"] if d["dataset"] == "zv/fs"]
    assert fs["remove"] == [INC_S1_S2, FULL_S1] and fs["newest_kept"]["snapshot"] == "s3"

    code, doc = cli("cold", "prune", "--json", "--keep-chains", "2", str(root))
    assert code == 0 and all(d["newest_kept"] is None for d in doc["datasets"])
    validate_document("cold-prune", doc)

    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))  # the dataset is not on this host
    code, doc = cli("cold", "prune", "--json", "--yes", str(root))
    assert code == 0 and doc["dry_run"] is False
    validate_document("cold-prune", doc)
    (fs,) = [d for d in doc["datasets"] if d["dataset"] == "zv/fs"]
    assert fs["deleted"] == [INC_S1_S2, FULL_S1] and fs["released"] == []
    assert "not reachable" in fs["note"]

    data = bytearray((root / "replicated-s2.zstream").read_bytes())
    data[len(data) // 2] ^= 1
    (root / "replicated-s2.zstream").write_bytes(bytes(data))
    code, doc = cli("cold", "prune", "--json", "--yes", str(root))
    assert code == 1 and doc["refused"] and doc["dry_run"] is False
    validate_document("cold-prune", doc)


@exercises("cold-prune")
def test_cold_prune_document_listing_lost_snapshots() -> None:
    """The fixtures hold no chain whose snapshots a newer chain lacks: this one decision is
    planned from a synthetic archive (as tests/cold/test_prune_plan.py does) and rendered by
    the real renderer, so that "lost" holds something."""

    def step(frm: int | None, to: int) -> Step:
        start = 0 if frm is None else 1000 + frm
        return Step("pool/set", start, 1000 + to, str(to), creation_time=100 + to)

    old = [ArchivedFile("pool/set@1.zfsfull", 100, (step(None, 1),))]
    old.append(ArchivedFile("pool/set@1-@2.zfsinc", 10, (step(1, 2),)))
    old.append(ArchivedFile("pool/set@2-@3.zfsinc", 10, (step(2, 3),)))  # links to the new
    new = [ArchivedFile("pool/set@3.zfsfull", 100, (step(None, 3),))]
    archived = [*old, *new]
    report = ArchiveReport(
        "/cold",
        [FileReport(f.name, "full", f.size, archived=f) for f in archived],
        plan(archived),
        {"pool/set": chains("pool/set", archived)},
        [],
    )
    decisions = plan_prune(report, keep_chains=1)
    pruned = Pruned(decisions, {}, False, blocked(report), [], report.exit_code)
    doc = json.loads(cold_report.prune_json(pruned))
    validate_document("cold-prune", doc)
    assert [lost["snapshot"] for lost in doc["datasets"][0]["lost"]] == ["1", "2"]


@exercises("cold-repair")
def test_cold_repair_documents(cli: Run, tmp_path: Path) -> None:
    root = _archive(
        tmp_path / "cold",
        {FULL_S1: "full_fs_s1.zstream", INC_S1_S2: "incr_fs_s1_s2.zstream"},
    )
    made = zverify("cold", "parity", "--no-progress", "--parity", "10", str(root))
    assert made.returncode == 0, made.stdout + made.stderr
    code, doc = cli("cold", "repair", "--json", str(root))
    assert code == 0 and doc["repairs"] == [] and doc["exit_code"] == 0
    validate_document("cold-repair", doc)
    flipped = bytearray((root / FULL_S1).read_bytes())
    flipped[1000] ^= 1
    (root / FULL_S1).write_bytes(bytes(flipped))
    with open(root / INC_S1_S2, "r+b") as f:  # beyond 10% parity
        f.seek(1000)
        f.write(bytes(100_000))
    code, doc = cli("cold", "repair", "--json", "--dry-run", str(root))
    validate_document("cold-repair", doc)
    assert code == 1 and doc["dry_run"] is True
    assert {r["file"]: r["status"] for r in doc["repairs"]} == {
        FULL_S1: "repairable",
        INC_S1_S2: "unrepairable",
    }
    code, doc = cli("cold", "repair", "--json", "--remove-damaged", str(root))
    validate_document("cold-repair", doc)
    assert code == 1 == doc["exit_code"]
    assert {r["file"]: r["status"] for r in doc["repairs"]} == {
        FULL_S1: "repaired",
        INC_S1_S2: "unrepairable",
    }
    assert doc["removed"] == [f"{FULL_S1}.damaged"]  # proven just now, so --yes removed it


@exercises("cold-scrub")
def test_cold_scrub_documents(cli: Run, tmp_path: Path) -> None:
    """A first run within a budget (files left unproven), then one that finds a byte
    flipped in a stream with parity: every optional key (parity, problems) appears."""
    root = _archive(
        tmp_path / "cold",
        {FULL_S1: "full_fs_s1.zstream", INC_S1_S2: "incr_fs_s1_s2.zstream"},
    )
    made = zverify("cold", "parity", "--no-progress", "--parity", "10", str(root))
    assert made.returncode == 0, made.stdout + made.stderr
    code, doc = cli("cold", "scrub", "--json", "--max-bytes", "1", str(root))
    validate_document("cold-scrub", doc)
    assert code == 0 and doc["oldest_proof_age_seconds"] is None and doc["stopped"]
    flipped = bytearray((root / FULL_S1).read_bytes())
    flipped[1000] ^= 1
    (root / FULL_S1).write_bytes(bytes(flipped))
    code, doc = cli("cold", "scrub", "--json", str(root))
    validate_document("cold-scrub", doc)
    files = {f["file"]: f for f in doc["files"]}
    assert code == 1 and files[FULL_S1]["result"] == "damaged"
    assert files[FULL_S1]["parity"]["repair"]["status"] == "repairable"


@exercises("cold-restore")
def test_cold_restore_documents(cli: Run, tmp_path: Path) -> None:
    root = _archive(
        tmp_path / "cold", {FULL_S1: "full_fs_s1.zstream", INC_S1_S2: "incr_fs_s1_s2.zstream"}
    )
    code, doc = cli("cold", "restore", "--json", "-n", str(root), "tank/back")
    assert code == 0 and doc["dry_run"] is True and doc["restored"] is None
    validate_document("cold-restore", doc)
    assert doc["files"] == [FULL_S1, INC_S1_S2] and doc["snapshot"]["name"] == "s2"
    assert doc["snapshot"]["guid"] == str(GUIDS["zv/fs@s2"])
    script = tmp_path / "receive.sh"
    code, doc = cli("cold", "restore", "--json", "--script", str(script), str(root), "tank/b")
    assert code == 0 and doc["script"] == str(script) and script.read_text().startswith("#!")
    validate_document("cold-restore", doc)


@exercises("cold-lock")
def test_cold_lock_documents() -> None:
    """Rendered from results (the command itself runs against a real S3 server with object
    lock in tests/cold/store/test_bucket.py): a run and a dry run, with a problem not read."""
    until = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    before = datetime.datetime(2029, 1, 1, tzinfo=datetime.UTC)
    unread = Problem("fs@s2.zfs", "unreadable", "cannot be read whole")
    done = [("fs@s1.zfs", "extended", None), ("fs@s1.zfs.json", "kept", before)]
    for result in (
        LockedChains("s3://b/archive/", until, done, dry_run=False),
        LockedChains(
            "s3://b/archive/", until, [("fs@s1.zfs", "would-extend", before)], True, [unread]
        ),
    ):
        doc = json.loads(cold_report.lock_json(result))
        validate_document("cold-lock", doc)
        assert doc["exit_code"] == result.exit_code


@exercises("cold-clean")
def test_cold_clean_documents(cli: Run, tmp_path: Path) -> None:
    root = _archive(tmp_path / "cold", {FULL_S1: "full_fs_s1.zstream"})
    (root / f"{INC_S1_S2}.partial").write_bytes(b"half a stream")
    os.symlink("/etc/passwd", root / "other.partial")
    code, doc = cli("cold", "clean", "--json", str(root))
    assert code == 1 and doc["dry_run"] is True  # the symlink is left alone
    validate_document("cold-clean", doc)
    assert {e["file"]: e["status"] for e in doc["leftovers"]} == {
        f"{INC_S1_S2}.partial": "would-remove",
        "other.partial": "left",
    }
    code, doc = cli("cold", "clean", "--json", "--yes", str(root))
    validate_document("cold-clean", doc)
    statuses = {e["file"]: e["status"] for e in doc["leftovers"]}
    assert statuses[f"{INC_S1_S2}.partial"] == "removed" and doc["dry_run"] is False


@exercises("cold-parity")
def test_cold_parity_documents(cli: Run, tmp_path: Path) -> None:
    root = _archive(
        tmp_path / "cold", {FULL_S1: "full_fs_s1.zstream", INC_S1_S2: "incr_fs_s1_s2.zstream"}
    )
    code, doc = cli("cold", "parity", "--json", "-n", str(root))
    assert code == 0 and doc["dry_run"] is True and doc["percent"] == 10
    validate_document("cold-parity", doc)
    assert {e["status"] for e in doc["streams"]} == {"added"}
    assert not list(root.glob("*.par2"))  # a dry run made nothing
    code, doc = cli("cold", "parity", "--json", "--parity", "5", str(root))
    assert code == 0 and doc["dry_run"] is False and doc["exit_code"] == 0
    validate_document("cold-parity", doc)
    assert len(list(root.glob("*.par2"))) >= 2


@exercises("cold-consolidate", "cold-digest")
def test_cold_consolidate_and_digest_documents(cli: Run, tmp_path: Path) -> None:
    """A real dry run; a written full, one whose digest differed and a digest of two routes
    rendered from results (the engine's own runs: tests/cold/test_consolidate.py)."""
    from zverify.cold.consolidate import Consolidated, Digested, Link, Route
    from zverify.sendstream.synthesize import FullSummary

    root = _archive(
        tmp_path / "cold", {FULL_S1: "full_fs_s1.zstream", INC_S1_S2: "incr_fs_s1_s2.zstream"}
    )
    code, doc = cli("cold", "consolidate", "-n", "--json", str(root))
    assert code == 0 and doc["dry_run"] is True
    validate_document("cold-consolidate", doc)
    links = (Link(FULL_S1, 0, "s1", 1), Link(INC_S1_S2, 0, "s2", 2))
    route = Route("zv/fs", "s2", 2, (FULL_S1, INC_S1_S2), links, 100)
    written = FullSummary(2, "zv/fs@s2", 4, 4, 10, 5000)
    for result in (
        Consolidated(route, "zv%2Ffs@s2.zfsfull", "/cold", False, "blake3:aa", "blake3:aa",
                     written, "ab" * 32),
        Consolidated(route, "zv%2Ffs@s2.zfsfull", "/cold", False, "blake3:aa", "blake3:bb",
                     written, differs="object 7 differs"),
    ):  # fmt: skip
        doc = json.loads(consolidate_report.consolidate_json(result))
        validate_document("cold-consolidate", doc)
        assert doc["exit_code"] == result.exit_code
    other = Route("zv/fs", "s2", 2, ("zv%2Ffs@s2.zfsfull",), (Link("x", 0, "s2", 2),), 50)
    digested = Digested("zv/fs", "s2", 2, [(route, "blake3:aa"), (other, "blake3:bb")], "x")
    doc = json.loads(consolidate_report.digest_json(digested))
    validate_document("cold-digest", doc)
    assert doc["exit_code"] == 1 and doc["equal"] is False


@exercises("cold-drill", "cold-scrub")
def test_cold_drill_documents(cli: Run, tmp_path: Path) -> None:
    """A real drill where no pool can be made (exit 2, recorded in the ledger, and shown by
    scrub as a dataset without a passing drill); a pass and a difference rendered from
    results (the drills themselves: tests/cold/test_drill_zfs.py, on real OpenZFS)."""
    from zverify.drill.drill import Compared, Drilled

    root = _archive(tmp_path / "cold", {FULL_S1: "full_fs_s1.zstream"})
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    code, doc = cli(
        "cold", "drill", "--json", "--dataset", "zv/fs", "--scratch-file", "64M",
        "--scratch-dir", str(scratch), str(root),
    )  # fmt: skip
    validate_document("cold-drill", doc)
    assert code == 2 and doc["result"] == "problem" and doc["failure"], doc
    assert list(scratch.iterdir()) == []  # the scratch file went with the failure
    assert "chain intact" in doc["ledger"]
    code, scrubbed = cli("cold", "scrub", "--json", str(root))
    validate_document("cold-scrub", scrubbed)
    assert scrubbed["drill_age_seconds"] == {"zv/fs": None} and "drill" not in scrubbed
    code, rotated = cli("cold", "scrub", "--json", "--drill-scratch-file", "64M", str(root))
    validate_document("cold-scrub", rotated)
    validate_document("cold-drill", rotated["drill"])
    assert code == 2 and rotated["drill"]["dataset"] == "zv/fs" and rotated["valid"]
    same = Compared("snapshot tank/fs@s1", 5)
    differs = Compared("manifest m.zvm", 5, 1, 0, [{"path": "a", "kind": "content", "detail": "x"}])
    for compared, code in ((same, 0), (differs, 1)):
        drilled = Drilled("zv/fs", "s1", 1, [FULL_S1], 100, "p/zverify-drill-1", compared)
        doc = json.loads(drill_report.drill_json(drilled))
        validate_document("cold-drill", doc)
        assert doc["exit_code"] == code


@exercises("certificate", "cold-drill")
def test_certificate_documents(tmp_path: Path) -> None:
    """A certificate of a real drill (one that could not run here: no ZFS) as the installed
    command writes it; its body is the drill's own document."""
    root = _archive(tmp_path / "cold", {FULL_S1: "full_fs_s1.zstream"})
    cert = tmp_path / "drill.cert.json"
    done = zverify(
        "cold", "drill", "--scratch-file", "64M", "--scratch-dir", str(tmp_path),
        "--certificate", str(cert), str(root),
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    doc = json.loads(cert.read_text())
    validate_document("certificate", doc)
    validate_document("cold-drill", doc["body"])
    assert doc["exit_code"] == 2 and doc["verdict"] == "NOT DRILLED"
