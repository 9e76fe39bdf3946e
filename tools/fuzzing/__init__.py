"""Fuzz inputs and targets for the parsers of untrusted input: send streams, nvlists and
resume tokens (sendstream.py), manifests of every format (manifest.py).  The brief, seeded CI
fuzz in tests/ and the long harness bench/fuzz_parsers.py run the same targets."""
