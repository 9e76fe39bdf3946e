"""zverify.boundedjson: json.loads where nesting too deep to parse is a ValueError."""

import json
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zverify import boundedjson

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=40,
)


@given(JSON)
def test_agrees_with_json_loads_on_what_it_accepts(value: object) -> None:
    text = json.dumps(value)
    assert boundedjson.loads(text) == json.loads(text)
    assert boundedjson.loads(text.encode("utf-16")) == value  # bytes: decoded as json.loads does


@pytest.mark.parametrize(
    "text",
    ["[" * 200_000, '{"a":' * 200_000 + "1" + "}" * 200_000, '[{"a":' * 100_000],
)
def test_deep_nesting_is_a_value_error(text: str) -> None:
    with pytest.raises(RecursionError):
        json.loads(text)  # what every caller failed to catch (review 3, H4)
    with pytest.raises(boundedjson.TooDeep, match="nested too deeply"):
        boundedjson.loads(text)
    with pytest.raises(ValueError):
        boundedjson.loads(text.encode("utf-16-le"))


def test_hostile_strings_take_linear_time() -> None:
    """Quote after escaped quote, a lone backslash at the end: the parser refuses it in one
    pass (a regex pre-scan of this change once took O(n^2) on it)."""
    text = "[" * 40 + '"' + '\\"' * 500_000 + "\\"
    started = time.monotonic()
    with pytest.raises(ValueError):
        boundedjson.loads(text)
    assert time.monotonic() - started < 2.0
