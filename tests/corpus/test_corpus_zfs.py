"""Every `restorable` claim `cold check` makes over archives drawn from the stream corpus
(the suite's recorded receive sequences, seeded) is received by real OpenZFS of the release
that wrote the streams, in the order the claim names, and its GUID is found.

CI receives a small sample (ZVERIFY_CORPUS_CASES, default 3: TCG is slow);
scripts/corpus-full.sh runs every chain of every corpus.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

import pytest

from tests.corpus import archives
from tests.corpus.model import DATA, RELEASES, corpus, sample

pytestmark = pytest.mark.zfs

CASES = int(os.environ.get("ZVERIFY_CORPUS_CASES", "3"))
SEED = int(os.environ.get("ZVERIFY_CORPUS_SEED", "20261128"))


def landing(target: str, route: tuple, k: int) -> str:
    """Where file k of a route lands: below the target as its dataset lies below the first's
    (a -R package's child, then that child's incrementals)."""
    first = archives.top(route[0]) or ""
    tops = [archives.top(s) for s in route[: k + 1]]
    here = next((t for t in reversed(tops) if t), first)
    return target + here[len(first) :] if here.startswith(first) else target


def receive_claim(host, root: Path, guest_root: str, claim, target: str) -> str | None:
    """Receive the claim's route into a fresh target; None if its GUID is there, else why not."""
    lines = [f"zfs destroy -r {target} 2>/dev/null; true"]
    for k, s in enumerate(claim.route):
        name = next(p.name for p in root.iterdir() if p.name.endswith(s.id))
        src = shlex.quote(f"{guest_root}/{name}")
        lines.append(
            f"zfs receive -u {shlex.quote(landing(target, claim.route, k))} <{src}"
            f" || {{ echo 'refused {s.id}' >&2; exit 1; }}"
        )
    lines.append(f"zfs list -H -r -t snapshot -o guid {target}")
    done = host.run(["sh", "-c", "\n".join(lines)], timeout=1800)
    host.run(["sh", "-c", f"zfs destroy -r {target} 2>/dev/null; true"])
    if done.returncode != 0:
        return done.stderr.strip()[-400:]
    return None if claim.guid in done.stdout.split() else f"guid {claim.guid} absent"


@pytest.mark.release_sample
def test_every_restorable_claim_over_corpus_archives_receives(
    zfs_release_host, zfs_release_pool
) -> None:
    host, pool = zfs_release_host, zfs_release_pool.name
    if host.release not in RELEASES:
        pytest.skip(f"no corpus of OpenZFS {host.release} is committed yet (tests/corpus/model.py)")
    if not (DATA / f"{host.release}.tar.xz").exists():
        pytest.fail(f"no corpus for OpenZFS {host.release} in {DATA}: python -m tools.zfsvm corpus")
    work = Path(host.exchange_host) / "corpus-archives"
    shutil.rmtree(work, ignore_errors=True)
    _, streams = corpus(host.release, str(work / "streams"))
    wrong, proven = [], 0
    chains = sample(streams, CASES, SEED)
    for n, chain in enumerate(chains):
        root = archives.make_archive(work / f"a{n}", chain)
        guest_root = f"{host.exchange_guest}/corpus-archives/a{n}"
        for i, claim in enumerate(archives.claims(root, chain)):
            why = receive_claim(host, root, guest_root, claim, f"{pool}/cc{n}x{i}")
            proven += why is None
            if why:
                ids = [s.id for s in claim.route]
                wrong.append(f"{claim.dataset}@{claim.snapshot} via {ids}: {why}")
    print(f"\nopenzfs-{host.release}: {proven} claims received over {len(chains)} corpus archives")
    assert not wrong, "restorable but receive refused:\n" + "\n".join(wrong)
