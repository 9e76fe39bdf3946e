"""`zverify cold`: ZFS send streams archived as files on cold storage.

names (the file-name convention), check (read every file, rebuild every chain by GUID);
the chain planning itself is pure and lives in zverify.sendstream.chain.
"""
