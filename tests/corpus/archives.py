"""Corpus chains as directory archives, and what `cold check` claims over them."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.cli.console import zverify
from tests.corpus.model import Stream
from zverify.report.cold.check import routes


@dataclass(frozen=True)
class Claim:
    dataset: str
    snapshot: str
    guid: str
    route: tuple[Stream, ...]


def make_archive(root: Path, chain: list[Stream]) -> Path:
    """Copies of one recorded receive sequence, named outside the naming convention."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for i, s in enumerate(chain):
        shutil.copy(s.path, root / f"{i:02d}-{s.id}")
    return root


def claims(root: Path, chain: list[Stream]) -> list[Claim]:
    by_name = {f"{i:02d}-{s.id}": s for i, s in enumerate(chain)}
    done = zverify("cold", "check", "--json", str(root))
    assert done.returncode in (0, 1, 2), done.stderr
    if not done.stdout.strip():
        return []
    doc = json.loads(done.stdout)
    found = []
    for d in doc.get("datasets", []):
        route_of = routes(d)
        for r in d["restorable"]:
            route = tuple(by_name[Path(f).name] for f in route_of[r["guid"]])
            found.append(Claim(d["dataset"], r["snapshot"], str(r["guid"]), route))
    return found


def top(stream: Stream) -> str | None:
    """The dataset a stream was sent from (None for a `send -t` resume stream)."""
    for arg in reversed(stream.entry["send_argv"]):
        if "@" in arg:
            return arg.split("@")[0]
    return None
