"""`python -m zverify` is the `zverify` command."""

from zverify.cli import main

if __name__ == "__main__":
    main()
