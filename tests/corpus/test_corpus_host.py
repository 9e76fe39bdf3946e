"""The stream corpus (OpenZFS's own send/receive workloads, replayed in the VM on each
release, tests/data/corpus) against zverify on this host, over the whole corpus:

- `stream verify` never calls valid a stream OpenZFS's receive refused for a reason in the
  stream itself (damaged, truncated, unsupported);
- `cold check` over directory archives made of the suite's recorded receive sequences never
  calls restorable a route through a stream whose receive was refused for its bytes or for
  a chain reason an archive cannot cure (wrong or missing base, -L toggled).

Streams that received but that verify flags are false alarms: printed, not failed.
"""

from __future__ import annotations

import bz2
import hashlib
import json
import os

import pytest

from tests.cli.console import zverify
from tests.corpus import archives
from tests.corpus.model import CHAIN_FAULTS, DATA, RELEASES, corpus, sample

COLD_CASES = int(os.environ.get("ZVERIFY_CORPUS_COLD_CASES", "16"))
BATCH = 60


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("corpus"))


def verify_all(streams) -> dict[str, dict]:
    """`stream verify --json` over every stream, in batches; per file its document."""
    by_path = {str(s.path): s.id for s in streams}
    paths = list(by_path)
    out = {}
    for i in range(0, len(paths), BATCH):
        done = zverify("stream", "verify", "--json", *paths[i : i + BATCH], timeout=900)
        assert done.returncode in (0, 1, 2), done.stderr
        for f in json.loads(done.stdout)["files"]:
            out[by_path[f["file"]]] = f
    assert len(out) == len(paths), "stream verify left files out of its document"
    return out


# the steps of tools/zfsvm/guest/corpus.sh, in its order
STEPS = (
    "large", "holes", "spill", "realloc", "churn", "encrypted", "resume", "freeobj",
    "holds_backup", "redacted", "oddities", "compress", "model",
)  # fmt: skip


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: f"openzfs-{r}")
def test_the_corpus_is_whole_and_has_negatives(release: str, workdir: str) -> None:
    """Every stream the index names is in the tarball with its sha256; receive refused some
    and took others; a complete run ran every step of corpus.sh (a run cut short says so)."""
    index, streams = corpus(release, workdir)
    for s in streams.values():
        assert hashlib.sha256(s.path.read_bytes()).hexdigest() == s.entry["sha256"], s.id
    refused = [s for s in streams.values() if s.refused]
    assert len(refused) >= 10 and len(streams) - len(refused) >= 10, (len(refused), release)
    if index.get("complete"):
        assert set(index["step_seconds"]) == set(STEPS), (release, index["step_seconds"])
    else:
        print(f"\nopenzfs-{release}: a partial corpus run ({len(streams)} streams)")


def test_the_corpus_holds_the_issue_s_300_streams(workdir: str) -> None:
    """Issue 43's target: at least 300 real streams, over the releases' corpora."""
    counts = {release: len(corpus(release, workdir)[1]) for release in RELEASES}
    assert sum(counts.values()) >= 300, counts


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: f"openzfs-{r}")
def test_stream_verify_never_calls_valid_what_receive_refused_for_its_bytes(
    release: str, workdir: str
) -> None:
    _, streams = corpus(release, workdir)
    docs = verify_all(streams.values())
    false_ok = [
        f"{s.id} ({s.entry['scenario']}, {s.entry['fault']}): {s.entry['receive_stderr']}"
        for s in streams.values()
        if s.refused_for_its_bytes and docs[s.id]["valid"]
    ]
    alarms = [
        f"{s.id} {' '.join(s.entry['send_argv'])}: {docs[s.id]['problems'][:1]}"
        for s in streams.values()
        if not s.refused and not docs[s.id]["valid"]
    ]
    refused = [s for s in streams.values() if s.refused]
    in_bytes = sum(s.refused_for_its_bytes for s in refused)
    print(
        f"\nopenzfs-{release}: {len(streams)} streams, {len(refused)} refused"
        f" ({in_bytes} for their bytes, {len(refused) - in_bytes} for their context);"
        f" {len(alarms)} received but flagged by stream verify"
    )
    for line in alarms:
        print(f"  flagged but received: {line}")
    assert not false_ok, "stream verify called valid what receive refused:\n" + "\n".join(false_ok)


def never_received(stream) -> bool:
    return stream.refused and (
        stream.refused_for_its_bytes or stream.entry["fault"] in CHAIN_FAULTS
    )


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: f"openzfs-{r}")
def test_cold_check_never_claims_a_route_receive_refused(
    release: str, workdir: str, tmp_path
) -> None:
    _, streams = corpus(release, workdir)
    wrong = []
    total = 0
    chains = sample(streams, COLD_CASES)
    for n, chain in enumerate(chains):
        root = archives.make_archive(tmp_path / f"a{n}", chain)
        for claim in archives.claims(root, chain):
            total += 1
            bad = [s.id for s in claim.route if never_received(s)]
            if bad:
                wrong.append(f"{claim.dataset}@{claim.snapshot} via {[s.id for s in claim.route]}")
    print(f"\nopenzfs-{release}: {total} restorable claims over {len(chains)} corpus archives")
    assert not wrong, "cold check claimed what receive refused:\n" + "\n".join(wrong)


def test_openzfs_dedup_fixture_is_intact_but_needs_redup(tmp_path) -> None:
    """OpenZFS's own recv_dedup fixture (Debian's zfs-test, a `zfs send -D` stream): OpenZFS 2
    refuses it until `zstream redup`; verify calls its bytes intact and says so for every
    deduplicated substream, read as OpenZFS keeps it (bzip2) and decompressed alike."""
    packed = DATA / "debian-zfs-test" / "dedup.zsend.bz2"
    stream = tmp_path / "dedup.zsend"
    stream.write_bytes(bz2.decompress(packed.read_bytes()))
    for path, compression in ((stream, None), (packed, "bzip2")):
        done = zverify("stream", "verify", "--json", str(path))
        doc = json.loads(done.stdout)["files"][0]
        assert done.returncode == 0 and doc["compression"] == compression, doc
    assert doc["valid"] and doc["kind"] == "replication package", doc
    assert doc["warnings"] and all(w["code"] == "dedup" for w in doc["warnings"]), doc
    assert all("zstream redup" in w["message"] for w in doc["warnings"])
