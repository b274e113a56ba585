"""decisions.loads on both backends: strings of every width mix, escapes at
every offset around the scanner's 8- and 16-byte steps, surrogates, the
string limit at those offsets, the object-key cache and large arrays.

Each case compares with ``json.loads`` (value and, for strings, the size in
memory, which tells the str's kind: the narrowest that holds its characters)."""

from __future__ import annotations

import json
import sys
from types import ModuleType

import pytest

from decisions import Limits, ParseError
from json_values import same_value

#: One character of each width: ASCII, Latin-1, the BMP, beyond the BMP.
WIDTHS = ("a", "\u00e9", "\u00ff", "\u0100", "\u6e21", "\uffff", "\U0001f600", "\U0010ffff")
#: Runs around the 8- and 16-byte steps of the scanner and the decoder.
RUNS = (0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33)
ESCAPES = ("\\n", "\\t", '\\"', "\\\\", "\\/", "\\u0041", "\\u00e9", "\\u6e21", "\\ud83d\\ude00", "\\u0000")


def _check_str(impl: ModuleType, text: str) -> None:
    """`text` raw and escaped, as a value and a key, against json.loads."""
    for doc in (json.dumps([text, {text: 1}], ensure_ascii=False), json.dumps([text, {text: 1}])):
        got = impl.loads(doc)
        assert got == [text, {text: 1}], doc
        sizes = [sys.getsizeof(got[0]), sys.getsizeof(next(iter(got[1])))]
        assert sizes == [sys.getsizeof(text)] * 2, doc


@pytest.mark.parametrize("before", RUNS)
def test_every_width_after_every_run(impl: ModuleType, before: int) -> None:
    """One character of each width after an ASCII run, then another run; and
    two widths together (the widest one decides the kind)."""
    for wide in WIDTHS:
        for after in RUNS:
            _check_str(impl, "x" * before + wide + "y" * after)
        for other in WIDTHS:
            _check_str(impl, "x" * before + wide + "z" * (before % 5) + other)


@pytest.mark.parametrize("run", RUNS)
def test_dense_and_sparse_wide_text(impl: ModuleType, run: int) -> None:
    for wide in WIDTHS[1:]:
        _check_str(impl, (wide + "q" * run) * 9)
        _check_str(impl, ("q" * run + wide * 3) * 5 + '\n\t"\\')


@pytest.mark.parametrize("offset", range(0, 40))
def test_escapes_at_every_offset(impl: ModuleType, offset: int) -> None:
    """Each escape after `offset` raw characters (ASCII or not), followed by
    runs of every length: the value and the key match json.loads."""
    for fill in ("a", "\u00e9", "\u6e21", "\U0001f600"):
        for escape in ESCAPES:
            for after in (0, 1, 15, 16, 17):
                body = fill * offset + escape + "b" * after + escape
                doc = f'["{body}", {{"{body}": [1]}}]'
                assert same_value(impl.loads(doc), json.loads(doc)), doc


@pytest.mark.parametrize("offset", range(0, 36))
def test_lone_surrogates_at_every_offset(impl: ModuleType, offset: int) -> None:
    """A lone or broken surrogate escape is LONE_SURROGATE at its backslash
    (a character offset, so a wide prefix counts once per character); a pair
    anywhere is one character."""
    for fill in ("a", "\u00e9", "\U0001f600"):
        prefix = '["' + fill * offset
        for bad in ("\\ud800", "\\udfff", "\\udc00\\ud800", "\\ud800\\u0041", "\\ud800\\n", "\\ud83dx"):
            with pytest.raises(ParseError) as info:
                impl.loads(prefix + bad + '"]')
            assert (info.value.code, info.value.pos) == ("LONE_SURROGATE", len(prefix)), bad
        pair = prefix + "\\ud83d\\ude00" + fill + '"]'
        assert impl.loads(pair) == [fill * offset + "\U0001f600" + fill]


@pytest.mark.parametrize("backslashes", [1, 2, 3, 4, 5])
def test_lone_low_surrogate_after_escaped_backslashes(impl: ModuleType, backslashes: int) -> None:
    """An even run of backslashes before ``ud800`` is escaped backslashes and
    the letters are text: a low surrogate escape after them is alone, in a
    value or a key. An odd run ends in a real ``\\ud800`` escape, which the
    low one pairs."""
    body = "\\" * backslashes + "ud800\\udc00"
    for doc in (f'["{body}"]', f'{{"{body}": 1}}'):
        if backslashes % 2:
            assert impl.loads(doc) == json.loads(doc), doc
            continue
        with pytest.raises(ParseError) as info:
            impl.loads(doc)
        assert (info.value.code, info.value.pos) == ("LONE_SURROGATE", 2 + backslashes + 5), doc


@pytest.mark.parametrize("limit", [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100])
def test_string_limit_with_escapes_at_every_length(impl: ModuleType, limit: int) -> None:
    """Decoded bytes count against max_string_bytes wherever the string's
    escapes and runs fall: exactly the limit parses, one more is
    STRING_TOO_LONG at the opening quote, whether the excess is in a run after
    an escape, in the escape itself, or the string never ends."""
    limits = Limits(max_string_bytes=limit)
    for head in range(0, min(limit, 20)):
        fits = "h" * head + "\\n" + "t" * (limit - head - 1)
        assert impl.loads(f'["{fits}"]', limits=limits) == ["h" * head + "\n" + "t" * (limit - head - 1)]
        for over in (fits + "t", fits + "\\t", fits + "t" * 50 + "\\n", fits + "\\u00e9"):
            with pytest.raises(ParseError) as info:
                impl.loads(f'["{over}"]', limits=limits)
            assert (info.value.code, info.value.pos) == ("STRING_TOO_LONG", 1), over
        with pytest.raises(ParseError) as info:
            impl.loads(f'["{fits}t' + "u" * 40, limits=limits)
        assert (info.value.code, info.value.pos) == ("STRING_TOO_LONG", 1)
        # Not over: the end of the text comes first.
        with pytest.raises(ParseError) as info:
            impl.loads(f'["{fits}', limits=limits)
        assert info.value.code == "UNEXPECTED_END"


@pytest.mark.parametrize("fill", ["a", "\u00e9", "\u6e21"])
def test_text_ending_inside_an_escaped_string(impl: ModuleType, fill: str) -> None:
    """A string with an escape that the text ends inside, at every offset
    around the 16-byte steps (mid-run, right after an escape, after a lone
    backslash): UNEXPECTED_END at the end of the text, never the end taken for
    a closing quote."""
    for run in range(0, 40):
        for tail in ("", "\\", "\\u00", "\\ud83d"):
            doc = '["\\n' + fill * run + tail
            with pytest.raises(ParseError) as info:
                impl.loads(doc)
            assert (info.value.code, info.value.pos) == ("UNEXPECTED_END", len(doc)), doc


def test_escaped_strings_one_after_another(impl: ModuleType) -> None:
    """A short escaped string after a long one, in one document and in the
    next: nothing of the longer one's text is left in the shorter."""
    long = "x" * 100 + "\\n" + "y" * 100
    doc = f'["{long}", "\\nab", {{"\\t": "\\u00e9"}}]'
    expected = [json.loads(f'"{long}"'), "\nab", {"\t": "\u00e9"}]
    assert impl.loads(doc) == expected
    assert impl.loads('"\\nab"') == "\nab"
    assert impl.loads('"\\u6e21"') == "\u6e21"


def test_control_characters_after_escapes(impl: ModuleType) -> None:
    for offset in range(0, 34):
        doc = '["' + "\\n" + "a" * offset + "\t" + '"]'
        with pytest.raises(ParseError) as info:
            impl.loads(doc)
        assert (info.value.code, info.value.pos) == ("CONTROL_CHARACTER", 4 + offset)


def _near_keys(length: int) -> list[str]:
    """Keys of one length that differ in one byte each, at every position
    (the same ends, the same middle, the same length: what a cheap hash and
    a cheap comparison of a cache could confuse)."""
    base = "k" * length
    keys = [base]
    for i in range(length):
        for c in "jl\x7f":
            keys.append(base[:i] + c + base[i + 1 :])
    return keys


def test_key_cache_never_returns_another_key(impl: ModuleType) -> None:
    """Keys of every cached length and just beyond, each differing from the
    others in one byte, parsed in several documents in several orders (so a
    key meets the cache entries of its neighbours): each comes back itself."""
    keys = [k for n in range(1, 36) for k in _near_keys(n)]
    for order in (keys, keys[::-1], keys[::2] + keys[1::2]):
        for start in range(0, len(order), 97):
            chunk = order[start : start + 97]
            obj = {k: i for i, k in enumerate(chunk)}
            got = impl.loads(json.dumps(obj))
            assert list(got) == chunk
            assert got == obj


def test_key_cache_tells_keys_padded_with_nul_apart(impl: ModuleType) -> None:
    """Short keys that are the same bytes but for NUL (``\\u0000``) bytes
    before or after them, or for their length, in separate documents and in
    one: each comes back itself (a key packed into a word with its zero
    bytes must keep its length)."""
    keys = [
        pad + core + tail
        for core in ("", "a", "ab", "abc")
        for pad in ("", "\0", "\0\0")
        for tail in ("", "\0", "\0" * 5)
    ]
    keys = sorted({k for k in keys if 0 < len(k) <= 10}, key=lambda k: (len(k), k))
    for key in keys + keys[::-1]:
        assert impl.loads(json.dumps({key: 1})) == {key: 1}
    obj = {k: i for i, k in enumerate(keys)}
    assert impl.loads(json.dumps(obj)) == obj


def test_key_cache_across_documents_and_spellings(impl: ModuleType) -> None:
    """The same key text spelt raw or with escapes is the same key (and a
    duplicate); a key seen before in another document with another value is
    still only a key; non-ASCII and long keys pass the cache by."""
    assert impl.loads('{"ab": 1}') == {"ab": 1}
    assert impl.loads('{"a\\u0062": 2}') == {"ab": 2}
    with pytest.raises(ParseError) as info:
        impl.loads('{"ab": 1, "a\\u0062": 2}')
    assert (info.value.code, info.value.pos) == ("DUPLICATE_KEY", 10)
    for key in ("é", "渡辺", "\U0001f600", "x" * 32, "x" * 33, "x" * 200, "", "a\nb", 'q"'):
        for value in (1, [key], {key: key}):
            doc = json.dumps({key: value, "other": key})
            assert same_value(impl.loads(doc), json.loads(doc))
    # Many distinct keys (more than the cache holds), twice: all correct.
    many = {f"key{i}": i for i in range(10_000)}
    for _ in range(2):
        assert impl.loads(json.dumps(many)) == many


def test_repeated_keys_are_one_object(impl: ModuleType) -> None:
    """Documents of many records with the same keys: equal to json.loads and
    the keys are interned-equal strings (hash and equality agree)."""
    records = [{"id": i, "name": f"n{i}", "tags": ["t"] * (i % 3)} for i in range(3000)]
    got = impl.loads(json.dumps(records))
    assert got == records
    assert all(hash(k) == hash(str(k)) for r in got[:10] for k in r)


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 1000, 100_000])
def test_large_and_nested_lists(impl: ModuleType, n: int) -> None:
    value = [list(range(i % 5)) for i in range(n)]
    assert impl.loads(json.dumps(value)) == value
    flat = list(range(n))
    assert impl.loads(json.dumps(flat)) == flat
    strings = [f"s{i}\u00e9" if i % 3 else f"s{i}" for i in range(n)]
    assert impl.loads(json.dumps(strings, ensure_ascii=False)) == strings
