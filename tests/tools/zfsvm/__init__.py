"""Tests of the VM harness, tools/zfsvm, that boot no VM."""
