"""`zverify cold drill`: receive what an archive keeps into a scratch dataset and prove the
received files are the source's (scratch.py: where it lands and that it always goes;
drill.py: the drill itself).  Above cold (which restores) and trees (which compares)."""
