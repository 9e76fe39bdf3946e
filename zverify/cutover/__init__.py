"""`zverify cutover`: is a replica of a dataset tree complete, current and faithful, so that
the old pool may be destroyed?  checks.py, snapshots.py and properties.py decide (pure);
gather.py reads both trees through zverify.zfs and runs them; content.py reads the data."""
