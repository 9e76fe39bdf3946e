"""Rendering of results; nothing here computes a verdict.

Naming: a module is named by the command whose result it renders (stream, cutover,
consolidate, drill), covering every format of that command, and never by a format alone,
which could take a stdlib name such as `json`.  compare has more than one module, so its
renderers are compare_text (one line per difference, the summary, the du table) and
compare_json (--json and --jsonl), beside its two writers: lists (--write-lists) and
outputs (which of those one run writes, fed as differences are found).  cold/ renders
every cold command's result through one table (render), a module per kind of result
(check; scrub, with its node_exporter textfile; changes) over the pieces they share
(documents).  Every JSON shape has an installed schema (`zverify schema NAME`).
"""
