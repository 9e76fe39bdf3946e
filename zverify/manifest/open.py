"""Open any manifest zverify reads, by its first bytes, as one side of a comparison."""

from zverify.compare.policy import FULL, DiffKind
from zverify.compare.sides import Side
from zverify.manifest.read import NativeManifest, root_label


def open_manifest(name: str, path: str, keep_xattrs: bool) -> Side:
    manifest = NativeManifest(path, keep_xattrs)
    header = manifest.header
    recorded = FULL if header.xattrs else FULL - {DiffKind.XATTR}
    notes = [
        f"{name} is the manifest of {root_label(header)} written {header.created} "
        f"by zverify {header.zverify}"
    ]
    if header.one_file_system:
        notes.append(f"{name} manifest was written with --one-file-system")
    return Side(
        name=name,
        label=path,
        entries=manifest,
        fs=header.filesystem,
        progress=lambda: (manifest.entries_read, manifest.bytes_read()),
        close=manifest.close,
        algorithm=header.algorithm,
        recorded=recorded,
        not_recorded_why="the manifest was written without xattrs",
        unverifiable=[f"{u} (when the manifest was written)" for u in header.unverifiable],
        notes=notes,
        is_manifest=True,
    )
