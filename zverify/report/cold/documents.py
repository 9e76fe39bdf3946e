"""The pieces every cold rendering shares: a file's key and an escaped name in JSON, a
parity set's and a problem's document, a restorable snapshot's, the text's line joiner and
the -q verdict line."""

import json
from typing import Any

from zverify.cold.names import for_json
from zverify.cold.parity import Parity
from zverify.cold.proof.check import Problem
from zverify.pathnames import one_line
from zverify.sendstream.chain import Restorable


def text_lines(lines: list[str]) -> str:
    """One line per line, whatever a message holds (names in it are shown() already; this is
    for the rest, e.g. a directory given in bytes that are not UTF-8)."""
    return "".join(one_line(line) + "\n" for line in lines)


def restorable_doc(r: Restorable, proof: str) -> dict[str, Any]:
    return {
        "snapshot": r.snapshot,
        "guid": str(r.guid),
        "creation_time": r.creation_time,
        "files": [json_name(n) for n in r.files],
        "bytes": r.bytes,
        "proven_by": proof,
    }


def json_name(name: str) -> str:
    """A file name inside a list, where no flag can go (or text for people that may hold
    one): escaped only when not UTF-8, never a lone surrogate in the JSON."""
    return for_json(name)[0]


def file_key(name: str) -> dict[str, Any]:
    text, escaped = for_json(name)
    return {"file": text, "file_escaped": True} if escaped else {"file": text}


def parity_doc(p: Parity) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "files": [json_name(n) for n in p.files],
        "source_blocks": p.source_blocks,
        "recovery_blocks": p.recovery_blocks,
        "percent": round(p.percent, 2) if p.percent is not None else None,
        "damaged_bytes": p.damaged_bytes,
    }
    if p.repair is not None:
        v = p.repair
        doc["repair"] = {
            "status": v.status,
            "damaged_blocks": v.damaged,
            "blocks": v.blocks,
            "recovery_blocks": v.recovery,
        }
        if v.detail:
            doc["repair"]["detail"] = json_name(v.detail)
    return doc


def problem_doc(p: Problem) -> dict[str, Any]:
    doc: dict[str, Any] = {**file_key(p.file), "kind": p.kind, "message": json_name(p.message)}
    if p.offset is not None:
        doc["offset"] = p.offset
    if p.damage_from is not None:
        doc["damage_from"] = p.damage_from
    if p.follows is not None:
        doc["follows"] = json_name(p.follows)
    return doc


# -- the verdict line (-q), warnings ----------------------------------------------------------


def verdict_only(text: str) -> str:
    """-q: the last line of a text rendering, which is always its verdict."""
    lines = text.splitlines(keepends=True)
    return lines[-1] if lines else ""


def dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2) + "\n"
