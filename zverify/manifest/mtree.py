"""BSD mtree specs: write one that `mtree -f` and `bsdtar` accept; read the common dialects.

Writing uses the full-path form (one line per entry, like `mtree -C`), names escaped as
octal `\\ooo` for every byte that is not printable ASCII and for space, `\\`, `#`, `=` and
the glob characters `*?[` (spec names are fnmatch patterns), `time` with nine digits of
nanoseconds and `sha256` digests.  mtree cannot express hardlink groups (only `nlink`),
xattrs, ACLs or holes: the writer says so.

Reading accepts the NetBSD, FreeBSD, libarchive and go-mtree dialects: `/set` and `/unset`,
the relative form with `..`, full paths, continuation lines, octal and C-style escapes
(`\\s`, `\\#`, `\\M^?`), and `time=S.N` read the way every mtree writes it: N is an integer
count of nanoseconds, however many digits (`.1234` is 1234 ns, not 0.1234 s).
"""

import itertools
import os
import re
import stat
from collections.abc import Iterable, Iterator

from zverify.compare.policy import DiffKind
from zverify.entry import SIZE_NOT_RECORDED, Entry, Kind
from zverify.hashing import DIGEST_SIZES, Algorithm
from zverify.manifest.bounds import MAX_DEPTH, MAX_FOREIGN_LINE, MAX_FOREIGN_PATH, bad_name
from zverify.manifest.listing import Listing, recorded_entry
from zverify.pathnames import sort_key

DROPPED = "hardlink groups (only nlink), xattrs, ACLs, holes, allocated sizes, symlink owners"
_SAFE = re.compile(rb"[^\x21\x22\x24-\x29\x2b-\x3c\x3e\x40-\x5a\x5d-\x7e]")

_TYPE_NAMES = {
    Kind.FILE: "file",
    Kind.DIR: "dir",
    Kind.SYMLINK: "link",
    Kind.FIFO: "fifo",
    Kind.SOCKET: "socket",
    Kind.CHAR: "char",
    Kind.BLOCK: "block",
}
_KINDS = {name: kind for kind, name in _TYPE_NAMES.items()}
# digest keywords, strongest first: the live side is hashed with the first every file has
_DIGESTS = {
    "sha512": Algorithm.SHA512,
    "sha256": Algorithm.SHA256,
    "sha1": Algorithm.SHA1,
    "md5": Algorithm.MD5,
}
# read, but compare nothing (names are shown, uid/gid compared; flags are BSD-only)
_NOT_COMPARED = {"uname", "gname", "flags", "cksum", "tags", "nochange", "resdevice",
                 "contents", "content", "tar_time", "ripemd160digest", "rmd160",
                 "rmd160digest", "sha384", "sha384digest", "optional"}  # fmt: skip
_READ = {"type", "mode", "uid", "gid", "size", "time", "link", "nlink", "device", "inode",
         "ignore"}  # fmt: skip
_KNOWN = _NOT_COMPARED | set(_DIGESTS) | _READ


def escape_name(path: bytes) -> str:
    return _SAFE.sub(lambda m: b"\\%03o" % m.group()[0], path).decode("ascii")


def spec_line(entry: Entry) -> str:
    """One full-path line (without newline) for a walked entry."""
    kind = Kind(entry.kind)
    name = "." if entry.path == b"" else "./" + escape_name(entry.path)
    seconds, nanos = divmod(entry.mtime_ns, 1_000_000_000)
    words = [name, f"type={_TYPE_NAMES.get(kind, 'file')}"]
    words += [f"mode={stat.S_IMODE(entry.mode):04o}", f"uid={entry.uid}", f"gid={entry.gid}"]
    words.append(f"time={seconds}.{nanos:09d}")
    if kind != Kind.DIR:
        words.append(f"nlink={entry.nlink}")
    if kind == Kind.FILE:
        words.append(f"size={entry.size}")
        if entry.digest is not None:
            words.append(f"sha256={entry.digest.hex()}")
    elif kind == Kind.SYMLINK and entry.link is not None:
        words.append(f"link={escape_name(entry.link)}")
    elif kind in (Kind.CHAR, Kind.BLOCK):
        words.append(f"device=native,{os.major(entry.rdev)},{os.minor(entry.rdev)}")
    return " ".join(words)


# ----------------------------------------------------------------------------- reading


def looks_like_spec(first: bytes) -> bool:
    """The first line of a spec: the #mtree signature, a comment, /set, or the root entry."""
    return first.startswith((b"#", b"/set", b"/unset", b". ", b".\t", b".\n", b"./"))


class SpecError(ValueError):
    def __init__(self, line: int, reason: str) -> None:
        super().__init__(reason)
        self.line = line


_CSTYLE = {"s": b" ", "t": b"\t", "n": b"\n", "r": b"\r", "\\": b"\\", "#": b"#", "a": b"\a",
           "b": b"\b", "f": b"\f", "v": b"\v", "0": b"\0", "E": b"\x1b", "$": b"$",
           "*": b"*", "?": b"?", "[": b"[", "=": b"=", " ": b" "}  # fmt: skip
_ESCAPE = re.compile(r"\\(?:([0-3][0-7]{2})|M([-^])(.)|\^(.)|(.))", re.DOTALL)


def unescape_name(text: str) -> bytes:
    """vis(3) decoding: octal, C-style, meta (\\M-x, \\M^x) and control (\\^x) escapes."""

    def one(m: re.Match[str]) -> str:
        octal, meta, meta_char, ctrl, plain = m.groups()
        if octal:
            return chr(int(octal, 8))
        if meta:
            base = ord(meta_char) if meta == "-" else _control(meta_char)
            return chr(0x80 | base)
        if ctrl:
            return chr(_control(ctrl))
        if plain in _CSTYLE:
            return _CSTYLE[plain].decode("latin-1")
        raise ValueError(f"unknown escape \\{plain} in {text[:60]!r}")

    return _ESCAPE.sub(one, text).encode("latin-1")


def _control(char: str) -> int:
    return 0x7F if char == "?" else ord(char) & 0x1F


def _logical_lines(lines: Iterable[bytes]) -> Iterator[tuple[int, str]]:
    """(first line number, text) with comments dropped and continuations joined."""
    pending, start = "", 0
    for number, raw in enumerate(lines, 1):
        text = raw.decode("latin-1").rstrip("\n").rstrip("\r")
        if not pending:
            start = number
            stripped = text.lstrip()
            if not stripped or stripped.startswith("#"):
                continue
        if text.endswith("\\") and not text.endswith("\\\\"):
            pending += text[:-1] + " "
            if len(pending) > MAX_FOREIGN_LINE:
                raise SpecError(start, f"a line continued past {MAX_FOREIGN_LINE} bytes")
            continue
        yield start, pending + text
        pending = ""
    if pending:
        raise SpecError(start, "the spec ends inside a continued line")


def parse(first: bytes, rest: Iterable[bytes]) -> Listing:
    """All entries of a spec, sorted; raises SpecError naming the line."""
    defaults: dict[str, str] = {}
    cwd: list[bytes] = []
    found: dict[bytes, tuple[int, dict[str, str]]] = {}
    for number, text in _logical_lines(itertools.chain([first], rest)):
        words = text.split()
        head = words[0]
        try:
            if head == "/set":
                defaults.update(_keywords(words[1:]))
            elif head == "/unset":
                for key in words[1:]:
                    defaults.clear() if key == "all" else defaults.pop(key, None)
            elif head == "..":
                if not cwd:
                    raise SpecError(number, "'..' above the root")
                cwd.pop()
            else:
                name = unescape_name(head)
                if name.startswith(b"/"):
                    raise SpecError(number, bad_name(name) or "an absolute name")
                keywords = {**defaults, **_keywords(words[1:])}
                path = _place(name, cwd, keywords)
                if len(path) > MAX_FOREIGN_PATH or len(cwd) > MAX_DEPTH:
                    raise SpecError(
                        number, f"a name deeper or longer than {MAX_FOREIGN_PATH} bytes"
                    )
                why = bad_name(path)
                if why is not None:
                    raise SpecError(number, why)
                if path in found:
                    raise SpecError(number, f"{head!r} appears twice")
                found[path] = (number, keywords)
        except ValueError as err:
            raise SpecError(number, str(err)) from None
    if b"" not in found:
        raise SpecError(1, "no entry for the root '.'")
    return _build(found)


def _keywords(words: list[str]) -> dict[str, str]:
    """The keywords of one line; an unknown one is an error now (a /set of a million
    made-up keywords would otherwise be copied into every entry)."""
    out = {}
    for word in words:
        key, eq, value = word.partition("=")
        if not eq:
            raise ValueError(f"{word!r} is not keyword=value")
        key = key.removesuffix("digest") if key.endswith("digest") else key
        if key.startswith("xattr."):
            continue  # go-mtree's xattrs: not compared (mtree sides lack xattrs), not kept
        if key not in _KNOWN:
            raise ValueError(f"unknown keyword {key!r}")
        out[key] = value
    return out


def _place(name: bytes, cwd: list[bytes], keywords: dict[str, str]) -> bytes:
    """The entry's path from the root; a relative-form directory is entered."""
    if b"/" in name:  # full-path form: does not change the current directory
        parts = [p for p in name.split(b"/") if p not in (b"", b".")]
        if not name.startswith((b"./", b"/")):
            parts = [p for p in cwd if p != b"."] + parts
        return b"/".join(parts)
    path = b"/".join(p for p in [*cwd, name] if p != b".")
    if keywords.get("type", "file") == "dir":
        cwd.append(name)  # the root '.' too: specs close it with a last '..'
    return path


def _build(found: dict[bytes, tuple[int, dict[str, str]]]) -> Listing:
    paths = sorted(found, key=sort_key)
    files = [found[p][1] for p in paths if found[p][1].get("type", "file") == "file"]
    algorithm = next((a for k, a in _DIGESTS.items() if files and all(k in f for f in files)), None)
    entries: list[Entry] = []
    groups: dict[str, int] = {}
    for ordinal, path in enumerate(paths, 1):
        number, keywords = found[path]
        try:
            entries.append(_entry(path, keywords, ordinal, algorithm, groups))
        except (ValueError, KeyError) as err:
            raise SpecError(number, f"bad value: {err}") from None
    lacking = _lacking([found[p][1] for p in paths], algorithm)
    sizes = all("size" in f for f in files)
    summary = (
        f"{len(entries):,} entries, {algorithm or 'no'} digests, "
        "no allocated sizes (its du -B1 counts 0)"
        + ("" if sizes else ", files without size= (its du counts them as 0 bytes)")
    )
    return Listing(entries, algorithm, lacking, sizes=sizes, summary=summary)


def _entry(
    path: bytes, kw: dict[str, str], ordinal: int, algorithm: Algorithm | None,
    groups: dict[str, int],
) -> Entry:  # fmt: skip
    unknown = set(kw) - _NOT_COMPARED - set(_DIGESTS) - {
        "type", "mode", "uid", "gid", "size", "time", "link", "nlink", "device", "inode",
        "ignore",
    } - {k for k in kw if k.startswith("xattr.")}  # fmt: skip
    if unknown:
        raise ValueError(f"unknown keyword {sorted(unknown)[0]!r}")
    if "ignore" in kw:
        raise ValueError("'ignore' (skip a subtree) is not supported: nothing below is checked")
    kind = _KINDS[kw.get("type", "file")]
    nlink = int(kw.get("nlink", "1"))
    ino = -groups.setdefault(kw["inode"], len(groups) + 1) if "inode" in kw else ordinal
    # a spec made with a keyword list leaving out size= (`mtree -c -k type,link,sha256digest`)
    # says nothing of sizes: taken as 0, every file would differ from its copy
    size = int(kw["size"]) if "size" in kw else SIZE_NOT_RECORDED if kind == Kind.FILE else 0
    if "size" in kw and size < 0:
        raise ValueError(f"size={kw['size']}")
    digest = None
    if algorithm is not None and kind == Kind.FILE:
        digest = bytes.fromhex(kw[algorithm.value])
        if len(digest) != DIGEST_SIZES[algorithm]:
            raise ValueError(f"{algorithm} digest of the wrong length")
    return recorded_entry(
        path,
        kind,
        ino,
        int(kw["mode"], 8) & 0o7777 if "mode" in kw else 0,
        uid=int(kw.get("uid", "0")),
        gid=int(kw.get("gid", "0")),
        nlink=nlink,
        rdev=_device(kw["device"]) if "device" in kw else 0,
        size=size,
        mtime_ns=_time(kw["time"]) if "time" in kw else 0,
        data_bytes=max(size, 0) if kind == Kind.FILE else 0,
        link=unescape_name(kw["link"]) if "link" in kw else None,
        digest=digest,
    )


def _time(text: str) -> int:
    seconds, _, nanos = text.partition(".")
    if not seconds.isdigit() or not (nanos == "" or nanos.isdigit()) or len(nanos) > 9:
        raise ValueError(f"time={text!r}")
    return int(seconds) * 1_000_000_000 + int(nanos or "0")


def _device(text: str) -> int:
    parts = text.split(",")
    if len(parts) == 1:
        return int(parts[0], 0)
    if len(parts) == 3:
        return os.makedev(int(parts[1], 0), int(parts[2], 0))
    raise ValueError(f"device={text!r}")


def _lacking(
    all_keywords: list[dict[str, str]], algorithm: Algorithm | None
) -> dict[DiffKind, str]:
    """The kinds not every entry of the spec carries the data for, and why."""

    def every(key: str, kinds: set[str] | None = None) -> bool:
        return all(
            key in kw for kw in all_keywords if kinds is None or kw.get("type", "file") in kinds
        )

    lacking: dict[DiffKind, str] = {DiffKind.XATTR: "mtree records no xattrs or ACLs"}
    has_files = any(kw.get("type", "file") == "file" for kw in all_keywords)
    if algorithm is None and has_files:  # no files: no content to lack (review 3, L6)
        lacking[DiffKind.CONTENT] = "not every file has a digest of one algorithm"
    if not every("mode", {"file", "dir", "fifo", "socket", "char", "block"}):
        lacking[DiffKind.MODE] = "not every entry has mode="
    if not (every("uid") and every("gid")):
        lacking[DiffKind.OWNER] = "not every entry has uid= and gid="
    if not every("time"):
        lacking[DiffKind.MTIME] = "not every entry has time="
    if not every("link", {"link"}):
        lacking[DiffKind.SYMLINK] = "not every symlink has link="
    if not every("device", {"char", "block"}):
        lacking[DiffKind.SPECIAL] = "not every device has device="
    if not every("inode", {"file", "link", "fifo", "socket", "char", "block"}):
        lacking[DiffKind.HARDLINK] = "mtree records nlink, not which paths share an inode"
    return lacking
