"""The JSON Schemas of every JSON document zverify prints, installed with the package so
that a script can validate what it reads against the schema of the very version that wrote
it: `zverify schema NAME` prints one (NAME is the file name without .schema.json)."""

from importlib import resources

from zverify.errors import UsageError

SUFFIX = ".schema.json"


def names() -> list[str]:
    found = (entry.name for entry in resources.files(__name__).iterdir())
    return sorted(name.removesuffix(SUFFIX) for name in found if name.endswith(SUFFIX))


def text(name: str) -> str:
    """The schema NAME as installed (UTF-8 JSON); an unknown NAME is a usage error."""
    known = names()
    if name not in known:
        raise UsageError(f"no schema named {name!r}; the schemas are: {', '.join(known)}")
    return (resources.files(__name__) / f"{name}{SUFFIX}").read_text(encoding="utf-8")
