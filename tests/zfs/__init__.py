"""Tests of zverify/zfs, and the fixtures of every test on real OpenZFS (fixtures.py)."""
