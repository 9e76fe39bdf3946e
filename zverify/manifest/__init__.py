"""Manifests: a tree recorded to a file, compared later or elsewhere as if it were live.

format.py is the native line format (one entry per line, every byte string escaped to
ASCII); write.py records a live walk into it; read.py turns a manifest back into the
canonical entry stream the comparison engine takes; files.py opens them (.zst, .gz, atomic
output); bounds.py holds what any manifest may contain.  Other tools' formats: mtree.py
(both ways), checkfile.py writes sha256sum/b3sum lists and checksums.py reads them,
hashdeep.py and bagit.py read theirs, listing.py sorts such a foreign list into canonical
order; open.py recognises any of them by its first line.
"""

# The formats `zverify manifest --format` writes; here so the CLI can name them without
# importing the writers (every zverify command loads the CLI).
FORMATS = ("native", "mtree", "sha256sum", "b3sum")
STDIO = "-"  # an --output or compare side that means stdout / stdin
