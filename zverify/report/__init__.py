"""Rendering of results; nothing here computes a verdict.

compare: text (one line per difference, the summary, the du table), json (--json and
--jsonl), lists (--write-lists), outputs (which of those one run writes, fed as differences
are found).  The other commands: stream, cutover, cold (every cold command but scrub) and
scrub (text, JSON and a node_exporter textfile).  Every JSON shape has an installed schema
(`zverify schema NAME`).
"""
