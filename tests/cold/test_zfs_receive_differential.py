"""The chain model against real OpenZFS: every snapshot `cold check` calls restorable is
received for real, in the order it names, and found by GUID; after `cold prune --yes` the
newest history of every dataset is received for real from what is left.

The streams are written once by plain `zfs send` (tools/zfsvm/guest/chain_streams.sh):
same-second snapshots, -L and not, -c, raw and plain sends of an encrypted dataset, -R and
-R -I packages with a child, -I packages over -i chains, a resume stream.  The archives are
hand-written scenarios (the review's findings) plus randomised ones drawn from those files
(seeded: ZVERIFY_DIFF_SEED, ZVERIFY_DIFF_CASES: 4 in CI, a sample that keeps CI inside its
time; `ZVERIFY_DIFF_CASES=24` or more for the full run).  The randomised ones are also kept
as people keep archives (issue 29): spread over two places, some in per-dataset subdirectories, some
compressed by the real zstd, gzip or xz, and checked and pruned with --recursive over both.
zverify runs on this host (the installed console script, as on a storage host without ZFS);
only the receives run where ZFS is.

The history each dataset really has (the order the script made its snapshots) is the oracle
for prune: a snapshot prune made unrestorable must be older than one that stays, and the
newest one must stay.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli.console import zverify
from zverify.report.cold.check import routes

pytestmark = pytest.mark.zfs

SCRIPT = "tools/zfsvm/guest/chain_streams.sh"
KEY_HEX = "6368616e2d6d6f64656c" + "00" * 22  # a fixed test key: it protects nothing
HISTORY = {  # each dataset's snapshots in the order the script made them
    "a": ["a0", "a1", "a2", "a3", "a4"],
    "b": ["b0", "b1", "b2"],
    "c": ["c0", "c1", "c2"],
    "c/kid": ["c0", "c1", "c2"],
}
GROUPS = {  # stream file -> (group, its top dataset below the pool)
    **{n: ("a", "a") for n in (
        "a0.full", "a0.full-L", "a0.full-c", "a2.full", "a2.full-L", "a0a1.inc", "a0a1.inc-L",
        "a1a2.inc", "a1a2.inc-L", "a0a2.inc", "a2a3.inc", "a2a3.inc-L", "a3a4.inc",
        "a3a4.inc-L", "a0a4.pkg-L", "a1a4.pkg", "a0.resume")},
    **{n: ("b", "b") for n in (
        "b0.full-w", "b0.full", "b0b1.inc-w", "b0b1.inc", "b1b2.inc-w", "b1b2.inc",
        "b0b2.pkg-w")},
    **{n: ("c", "c") for n in (
        "c1.R", "c1c2.RI", "c0.full", "c0c1.inc", "c1.full", "c2.full", "c1c2.inc")},
    "kid1.full": ("c", "c/kid"),
    "kid1kid2.inc": ("c", "c/kid"),
}  # fmt: skip
HAND_WRITTEN = {
    # C1: @a1 and @a2 in one txg; a new full of @a2 must not cost @a3 and @a4
    "same-second-new-full": ["a0.full-L", "a0a4.pkg-L", "a2.full-L"],
    "same-second-chain": ["a0.full", "a0a1.inc", "a1a2.inc", "a2.full"],
    # C3: -L and not; raw and plain
    "large-blocks-and-not": ["a0.full-L", "a0.full", "a0a1.inc", "a0a1.inc-L", "a1a2.inc"],
    "large-blocks-full-only": ["a0.full-L", "a0a1.inc", "a1a2.inc-L"],
    "raw-and-plain": ["b0.full-w", "b0b1.inc-w", "b0.full", "b0b1.inc", "b1b2.inc-w", "b1b2.inc"],
    "plain-full-raw-incremental": ["b0.full", "b0b1.inc-w", "b1b2.inc"],
    "raw-full-plain-incremental": ["b0.full-w", "b0b1.inc", "b1b2.inc-w"],
    "raw-package": ["b0.full-w", "b0b2.pkg-w", "b0b1.inc"],
    # C4: a resume stream beside the complete full, and alone
    "resume-beside-full": ["a0.resume", "a0.full", "a0a1.inc"],
    "resume-alone": ["a0.resume", "a0a1.inc"],
    # -I packages over -i chains
    "packages-over-incrementals": [
        "a0.full", "a0a1.inc", "a1a2.inc", "a2a3.inc", "a0a4.pkg-L", "a1a4.pkg", "a0a2.inc"],
    # C2: a -R package is the child's only chain while the parent moves on
    "replication-child": ["c1.R", "c1c2.inc", "c2.full"],
    "replication-incremental": ["c1.R", "c1c2.RI", "kid1.full", "c0.full", "c0c1.inc"],
    "per-dataset": ["c0.full", "c0c1.inc", "c1.full", "c1c2.inc", "kid1.full", "kid1kid2.inc"],
}  # fmt: skip
SEED = int(os.environ.get("ZVERIFY_DIFF_SEED", "20261125"))
RANDOM_CASES = int(os.environ.get("ZVERIFY_DIFF_CASES", "4"))
# the full run's cases: what the generator is held to reach (test_randomised_archives_...)
GENERATED = max(RANDOM_CASES, 24)


def random_cases(count: int = RANDOM_CASES) -> dict[str, list[str]]:
    """Each from one group's files: mostly two starts (so that prune has a chain to weigh
    against another), then any others, sometimes the resume stream."""
    rng = random.Random(SEED)
    cases = {}
    for i in range(count):
        group = rng.choice("aaabbc")
        pool = sorted(n for n, (g, _) in GROUPS.items() if g == group)
        starts = [n for n in pool if n.endswith((".full", ".full-L", ".full-w", ".full-c", ".R"))]
        files = rng.sample(starts, 2 if rng.random() < 0.7 else 1)
        rest = [n for n in pool if n not in files]
        files += rng.sample(rest, rng.randint(1, min(4, len(rest))))
        if group == "a" and "a0.resume" not in files and rng.random() < 0.3:
            files.append("a0.resume")
        cases[f"random-{SEED}-{i}"] = rng.sample(files, len(files))  # any order of names
    return cases


CASES = {**HAND_WRITTEN, **random_cases()}


@dataclass
class Corpus:
    host: Any
    pool: str
    streams_host: Path  # the stream files, seen from here
    streams_guest: str  # ... and from where ZFS runs
    snapshot_of: dict[str, tuple[str, str]]  # guid -> (dataset below the pool, snapshot)

    def guest(self, path: Path) -> str:
        return f"{self.streams_guest}/{path.relative_to(self.streams_host)}"


@pytest.fixture(scope="module")
def corpus(zfs_release_host, zfs_release_pool) -> Corpus:
    """The streams, written and received by one OpenZFS release: every test here runs on
    each release the harness builds (2.1, 2.3), as streams and receivers of both."""
    host, pool = zfs_release_host, zfs_release_pool.name
    out_host = Path(host.exchange_host) / "chain-streams"
    out_guest = f"{host.exchange_guest}/chain-streams"
    keyfile = "/root/chain-key" if host.kind == "vm" else f"{host.exchange_guest}/chain-key"
    host.run(["sh", "-c", f"umask 077; cat > {keyfile}"], input=KEY_HEX, check=True)
    made = host.run(["sh", SCRIPT, pool, out_guest, keyfile], timeout=1800)
    assert made.returncode == 0, made.stderr[-3000:]
    snapshot_of = {}
    for line in (out_host / "guids.tsv").read_text().splitlines():
        name, guid = line.split("\t")
        dataset, snap = name.split("@")
        snapshot_of[guid] = (dataset[len(pool) + 1 :], snap)
    return Corpus(host, pool, out_host, out_guest, snapshot_of)


# -- what zverify claims ----------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    dataset: str  # below the pool
    snapshot: str
    guid: str
    files: tuple[str, ...]


def make_archive(corpus: Corpus, name: str, files: list[str]) -> Path:
    """A directory of copies (names outside the convention: only the streams speak)."""
    root = corpus.streams_host / "archives" / name
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for i, stream in enumerate(files):
        shutil.copy(corpus.streams_host / stream, root / f"{i:02d}-{stream}")
    return root


COMPRESSORS = {".zst": "zstd", ".gz": "gzip", ".xz": "xz"}


def make_kept_archive(corpus: Corpus, name: str, files: list[str]) -> list[Path]:
    """The same copies kept as people keep them: over two places, some in a subdirectory
    per dataset, some compressed by the real tools (seeded by the case's name)."""
    rng = random.Random(f"{SEED}-{name}")
    base = corpus.streams_host / "kept" / name
    shutil.rmtree(base, ignore_errors=True)
    places = [base / "disk1", base / "disk2"]
    for i, stream in enumerate(files):
        where = rng.choice(places)
        if rng.random() < 0.5:
            where = where / GROUPS[stream][1].replace("/", "-")
        where.mkdir(parents=True, exist_ok=True)
        suffix = rng.choice(["", "", ".zst", ".gz", ".xz"])
        out = where / f"{i:02d}-{stream}{suffix}"
        if suffix:
            with open(out, "wb") as f:
                tool = [COMPRESSORS[suffix], "-q", "-c", str(corpus.streams_host / stream)]
                subprocess.run(tool, stdout=f, check=True)
        else:
            shutil.copy(corpus.streams_host / stream, out)
    for place in places:
        place.mkdir(parents=True, exist_ok=True)
    return places


def kept_files(places: list[Path]) -> set[str]:
    return {str(p) for place in places for p in place.rglob("*") if p.is_file()}


def claims(corpus: Corpus, *places: Path) -> tuple[int, list[Claim]]:
    done = zverify("cold", "check", "--json", "--recursive", *map(str, places))
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(done.stdout)
    found = []
    for d in doc["datasets"]:
        route_of = routes(d)
        for r in d["restorable"]:
            dataset, snap = corpus.snapshot_of[r["guid"]]
            assert f"{corpus.pool}/{dataset}" == d["dataset"] and snap == r["snapshot"], r
            found.append(Claim(dataset, snap, r["guid"], tuple(route_of[r["guid"]])))
    return done.returncode, found


def top(file: str) -> str:
    name = os.path.basename(file)
    name = (
        name.removesuffix(os.path.splitext(name)[1]) if name.endswith(tuple(COMPRESSORS)) else name
    )
    return GROUPS[name.split("-", 1)[1]][1]


# -- what OpenZFS does --------------------------------------------------------------------------


def receive_routes(corpus: Corpus, root: Path, routes: list[tuple[str, ...]], tag: str):
    """Receive each route into a new dataset tree, each file where its top dataset lands;
    returns, per route, the GUIDs present under the target after each file (None from the
    first refused receive on) and what the refusals said."""
    lines = []
    for i, route in enumerate(routes):
        target = f"{corpus.pool}/rcv-{tag}-{i}"
        lines.append(f"echo '@@route {i}'")
        for k, file in enumerate(route):
            landing = target + top(file)[len(top(route[0])) :]
            path = shlex.quote(corpus.guest(root / file))
            tool = COMPRESSORS.get(os.path.splitext(file)[1])
            feed = f"{tool} -dc {path} |" if tool else f"< {path}"
            lines.append(
                f"if {feed} zfs receive -u {shlex.quote(landing)} 2>/tmp/rcv.err; then "
                f"echo '@@ok {i} {k}'; zfs list -H -r -t snapshot -o guid {target}; "
                f"else echo '@@refused {i} {k}'; cat /tmp/rcv.err; fi"
            )
        lines.append(f"zfs destroy -r {target} 2>/dev/null || true")
    out = corpus.host.run(["sh", "-c", "\n".join(lines)], timeout=1800).stdout
    present: dict[tuple[int, int], set[str] | None] = {}
    said: dict[tuple[int, int], str] = {}
    at = None
    for line in out.splitlines():
        if line.startswith("@@ok ") or line.startswith("@@refused "):
            word, i, k = line.split()
            at = (int(i), int(k))
            present[at] = set() if word == "@@ok" else None
        elif line.startswith("@@route"):
            at = None
        elif at is not None:
            if present[at] is None:
                said[at] = said.get(at, "") + line
            else:
                present[at].add(line.strip())  # type: ignore[union-attr]
    return present, said


def refuted(corpus: Corpus, root: Path, found: list[Claim], tag: str) -> list[str]:
    """Each claim that real receives do not bear out, in words."""
    routes = sorted({c.files for c in found})
    maximal = [r for r in routes if not any(o != r and o[: len(r)] == r for o in routes)]
    present, said = receive_routes(corpus, root, maximal, tag)
    wrong = []
    for c in found:
        i = next(i for i, r in enumerate(maximal) if r[: len(c.files)] == c.files)
        k = len(c.files) - 1
        refusal = next(
            (said.get((i, j), "?") for j in range(k + 1) if present.get((i, j)) is None), None
        )
        if refusal is not None:
            wrong.append(f"{c.dataset}@{c.snapshot} from {c.files}: zfs receive refused: {refusal}")
        elif c.guid not in present[(i, k)]:  # type: ignore[operator]
            wrong.append(f"{c.dataset}@{c.snapshot} (guid {c.guid}) absent after {c.files}")
    return wrong


def index(dataset: str, snapshot: str) -> int:
    return HISTORY[dataset].index(snapshot)


# The findings about receive rules (-L, raw, resume, same-second fulls, -R children) are what
# can differ between OpenZFS releases: CI runs them on every release, the rest on 2.1 only.
ACROSS_RELEASES = {
    "same-second-new-full", "large-blocks-and-not", "large-blocks-full-only", "raw-and-plain",
    "plain-full-raw-incremental", "raw-full-plain-incremental", "raw-package",
    "resume-beside-full", "resume-alone", "replication-child",
}  # fmt: skip


def sampled(case: str) -> Any:
    return pytest.param(case, marks=pytest.mark.release_sample) if case in ACROSS_RELEASES else case


@pytest.mark.parametrize("case", [sampled(c) for c in sorted(CASES)])
def test_claims_receive_and_prune_keeps_the_newest_history(corpus: Corpus, case: str) -> None:
    files = CASES[case]
    root = make_archive(corpus, case, files)
    claims_receive_and_prune(corpus, case, [root])


@pytest.mark.parametrize("case", sorted(random_cases())[: max(1, RANDOM_CASES // 2)])
def test_archives_kept_by_hand_claim_receive_and_prune_the_same(corpus: Corpus, case: str) -> None:
    """Compressed, over two places, partly in per-dataset subdirectories: the same proofs."""
    places = make_kept_archive(corpus, case, CASES[case])
    claims_receive_and_prune(corpus, f"kept-{case}", places)


def claims_receive_and_prune(corpus: Corpus, case: str, places: list[Path]) -> None:
    """Every claim of `cold check` received for real; after `cold prune --yes` the newest
    history of every dataset is left and received for real; nothing newer was lost."""
    root = places[0]
    _, before = claims(corpus, *places)
    wrong = refuted(corpus, root, before, case)
    assert not wrong, f"{case} {CASES.get(case.removeprefix('kept-'))}:\n" + "\n".join(wrong)

    listed = kept_files(places)
    where = map(str, places)
    done = zverify("cold", "prune", "--yes", "--json", "--recursive", *where)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    _, after = claims(corpus, *places)
    deleted = sorted(listed - kept_files(places))
    print(f"{case}: {len(before)} claims proven; prune deleted {deleted}")
    for dataset in {c.dataset for c in before}:
        had = {c.snapshot for c in before if c.dataset == dataset}
        has = {c.snapshot for c in after if c.dataset == dataset}
        assert has <= had, (case, dataset, has, had)
        newest = max(had, key=lambda s: index(dataset, s))
        assert newest in has, f"{case}: prune lost @{newest} of {dataset} (deleted {deleted})"
        for lost in had - has:
            assert any(index(dataset, lost) < index(dataset, s) for s in has), (case, lost, has)
    # the newest history of every dataset, received for real from what prune left
    newest_after = [
        c for c in after
        if c.snapshot == max((o.snapshot for o in after if o.dataset == c.dataset),
                             key=lambda s: index(c.dataset, s))
    ]  # fmt: skip
    wrong = refuted(corpus, root, newest_after, f"{case}-pruned")
    assert not wrong, f"{case} after prune (deleted {deleted}):\n" + "\n".join(wrong)


@pytest.mark.release_sample
def test_openzfs_refuses_what_the_model_refuses(corpus: Corpus) -> None:
    """The receive rules' refusals, each shown on real OpenZFS (the model may refuse more
    than OpenZFS, never less: these are the ones it states as OpenZFS's)."""
    pairs = {
        "an incremental without -L after -L": ("a0.full-L", "a0a1.inc", "-L"),
        "a raw incremental after a plain full": ("b0.full", "b0b1.inc-w", "raw receive"),
        "a plain incremental after a raw full (no key loaded)": ("b0.full-w", "b0b1.inc", ""),
        "a resume stream as a new dataset": ("a0.resume", None, ""),
    }
    root = make_archive(corpus, "refusals", sorted({f for p in pairs.values() for f in p[:2] if f}))
    names = {p.name.split("-", 1)[1]: p.name for p in root.iterdir()}
    for what, (first, second, words) in pairs.items():
        route = (names[first],) if second is None else (names[first], names[second])
        present, said = receive_routes(corpus, root, [route], "refuse")
        last = (0, len(route) - 1)
        assert all(present.get((0, k)) is not None for k in range(len(route) - 1)), what
        assert present.get(last) is None, f"OpenZFS took {what}"
        assert words in said.get(last, ""), (what, said)


def test_randomised_archives_exercise_the_rules(corpus: Corpus) -> None:
    """The generated cases are only worth something if they reach the cases that matter:
    refusals by flags, resume streams, and prunes that delete.  Counted over the full run's
    cases (GENERATED; checks and prune plans only, no receive): CI receives a sample of
    them, too few to reach every kind."""
    generated = random_cases(GENERATED)
    seen: dict[str, int] = {"unreceivable": 0, "resume": 0, "deleting prunes": 0}
    for case, files in sorted(generated.items()):
        root = make_archive(corpus, f"count-{case}", files)
        doc = json.loads(zverify("cold", "check", "--json", str(root)).stdout)
        kinds = [p["kind"] for d in doc["datasets"] for p in d["problems"]]
        kinds += [p["kind"] for f in doc["files"] for p in f["problems"]]
        seen["unreceivable"] += kinds.count("unreceivable")
        seen["resume"] += kinds.count("resume")
        plan = json.loads(zverify("cold", "prune", "--json", str(root)).stdout)
        seen["deleting prunes"] += any(d["remove"] for d in plan["datasets"])
    print(f"seed {SEED}: {seen}")
    assert all(seen.values()), seen
    kept = {"compressed": 0, "in a subdirectory": 0, "on the second disk": 0, "pruned on both": 0}
    for case in sorted(generated)[: GENERATED // 2]:
        places = make_kept_archive(corpus, f"count-{case}", generated[case])
        files = kept_files(places)
        kept["compressed"] += sum(f.endswith(tuple(COMPRESSORS)) for f in files)
        kept["in a subdirectory"] += sum(Path(f).parent not in places for f in files)
        kept["on the second disk"] += sum(f.startswith(f"{places[1]}/") for f in files)
        where = map(str, places)
        plan = json.loads(zverify("cold", "prune", "--json", "--recursive", *where).stdout)
        removed = [f for d in plan["datasets"] for f in d["remove"]]
        kept["pruned on both"] += all(any(f.startswith(f"{p}/") for f in removed) for p in places)
    print(f"seed {SEED}, kept as people keep them: {kept}")
    assert all(kept.values()), kept
