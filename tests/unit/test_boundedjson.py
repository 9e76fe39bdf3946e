"""zverify.boundedjson: json.loads with nesting refused before Python's parser recurses."""

import json

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
    [
        "[" * 200_000,  # json.loads: RecursionError, which is no ValueError
        "[" * 33 + "]" * 33,  # valid JSON, but deeper than any file zverify reads
        '{"a":' * 40 + "1" + "}" * 40,
        '["\\\\"' + "[" * 40,  # an escaped backslash ends the string: the brackets count
        "]" * 100 + "[" * 40,  # closing brackets first do not hide later depth
    ],
)
def test_deep_nesting_is_a_value_error(text: str) -> None:
    with pytest.raises(boundedjson.TooDeep, match="nested too deeply"):
        boundedjson.loads(text)
    with pytest.raises(ValueError):
        boundedjson.loads(text.encode("utf-16-le"))


def test_brackets_in_strings_do_not_count() -> None:
    text = json.dumps(["[" * 1000, "{" * 1000, '\\"[[[[' * 100])
    assert boundedjson.loads(text) == json.loads(text)
    assert boundedjson.loads("[" * 32 + "]" * 32) == json.loads("[" * 32 + "]" * 32)


def test_an_unterminated_string_is_refused_in_linear_time() -> None:
    text = "[" * 33 + '"' + '\\"' * 1_000_000  # quote after quote, none of them closing
    with pytest.raises(ValueError):
        boundedjson.loads(text[33:] + "[" * 40)
    with pytest.raises(boundedjson.TooDeep):
        boundedjson.loads(text)
