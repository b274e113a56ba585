"""The JSON conformance suite (nst/JSONTestSuite) on both backends.

Every ``y_`` file is accepted with the value the stdlib gives (except the two
duplicate-key files, which the I-JSON profile rejects: see
``tests/fixtures/README.md``), every ``n_`` file is rejected with a
``ParseError`` and nothing else, and each ``i_`` (implementation-defined) file
has the outcome written in :data:`IMPLEMENTATION_DEFINED`. ``test_transform``
holds inputs whose value parsers disagree on; :data:`TRANSFORM` pins ours.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from decisions import ParseError
from json_values import same_value

SUITE = Path(__file__).parent / "fixtures" / "jsontestsuite"
PARSING = sorted(p.name for p in (SUITE / "test_parsing").iterdir())

#: ``y_`` files rejected on purpose: (code, pos).
Y_REJECTED: dict[str, tuple[str, int]] = {
    "y_object_duplicated_key.json": ("DUPLICATE_KEY", 9),
    "y_object_duplicated_key_and_value.json": ("DUPLICATE_KEY", 9),
}

#: Each ``i_`` file's outcome: the accepted value, or (code, pos) of the rejection.
IMPLEMENTATION_DEFINED: dict[str, Any] = {
    # Float underflow is not an error: the correctly rounded value is 0.0.
    "i_number_double_huge_neg_exp.json": [0.0],
    "i_number_real_underflow.json": [0.0],
    # Over-long number text is rejected before any conversion.
    "i_number_huge_exp.json": ("NUMBER_TOO_LONG", 1),
    # Floats that overflow a double and integers beyond 64 bits are rejected.
    "i_number_neg_int_huge_exp.json": ("NUMBER_OUT_OF_RANGE", 1),
    "i_number_pos_double_huge_exp.json": ("NUMBER_OUT_OF_RANGE", 1),
    "i_number_real_neg_overflow.json": ("NUMBER_OUT_OF_RANGE", 1),
    "i_number_real_pos_overflow.json": ("NUMBER_OUT_OF_RANGE", 1),
    "i_number_too_big_neg_int.json": ("NUMBER_OUT_OF_RANGE", 1),
    "i_number_too_big_pos_int.json": ("NUMBER_OUT_OF_RANGE", 1),
    "i_number_very_big_negative_int.json": ("NUMBER_OUT_OF_RANGE", 1),
    # Surrogate escapes must come as a high-low pair.
    "i_object_key_lone_2nd_surrogate.json": ("LONE_SURROGATE", 2),
    "i_string_1st_surrogate_but_2nd_missing.json": ("LONE_SURROGATE", 2),
    "i_string_1st_valid_surrogate_2nd_invalid.json": ("LONE_SURROGATE", 2),
    "i_string_incomplete_surrogate_and_escape_valid.json": ("LONE_SURROGATE", 2),
    "i_string_incomplete_surrogate_pair.json": ("LONE_SURROGATE", 2),
    "i_string_incomplete_surrogates_escape_valid.json": ("LONE_SURROGATE", 2),
    "i_string_invalid_lonely_surrogate.json": ("LONE_SURROGATE", 2),
    "i_string_invalid_surrogate.json": ("LONE_SURROGATE", 2),
    "i_string_inverted_surrogates_U+1D11E.json": ("LONE_SURROGATE", 2),
    "i_string_lone_second_surrogate.json": ("LONE_SURROGATE", 2),
    # Only UTF-8 is accepted: no BOM, no UTF-16, no invalid or overlong sequences.
    "i_string_UTF-16LE_with_BOM.json": ("UTF16_INPUT", 0),
    "i_string_utf16BE_no_BOM.json": ("UTF16_INPUT", 0),
    "i_string_utf16LE_no_BOM.json": ("UTF16_INPUT", 0),
    "i_structure_UTF-8_BOM_empty_object.json": ("BOM", 0),
    "i_string_UTF-8_invalid_sequence.json": ("INVALID_UTF8", 4),
    "i_string_UTF8_surrogate_U+D800.json": ("INVALID_UTF8", 2),
    "i_string_invalid_utf-8.json": ("INVALID_UTF8", 2),
    "i_string_iso_latin_1.json": ("INVALID_UTF8", 2),
    "i_string_lone_utf8_continuation_byte.json": ("INVALID_UTF8", 2),
    "i_string_not_in_unicode_range.json": ("INVALID_UTF8", 2),
    "i_string_overlong_sequence_2_bytes.json": ("INVALID_UTF8", 2),
    "i_string_overlong_sequence_6_bytes.json": ("INVALID_UTF8", 2),
    "i_string_overlong_sequence_6_bytes_null.json": ("INVALID_UTF8", 2),
    "i_string_truncated-utf-8.json": ("INVALID_UTF8", 2),
    # 500 levels are beyond the default max_depth of 64.
    "i_structure_500_nested_arrays.json": ("DEPTH_EXCEEDED", 64),
}

#: ``test_transform``: the accepted value, or (code, pos).
TRANSFORM: dict[str, Any] = {
    "number_-9223372036854775808.json": [-(2**63)],
    "number_-9223372036854775809.json": ("NUMBER_OUT_OF_RANGE", 1),
    "number_1.0.json": [1.0],
    "number_1.000000000000000005.json": [1.0],
    "number_1000000000000000.json": [1000000000000000],
    "number_10000000000000000999.json": [10000000000000000999],
    "number_1e-999.json": [0.0],
    "number_1e6.json": [1e6],
    "number_9223372036854775807.json": [2**63 - 1],
    "number_9223372036854775808.json": [2**63],
    # Keys are compared as code points, without Unicode normalisation.
    "object_key_nfc_nfd.json": {"\u00e9": "NFC", "e\u0301": "NFD"},
    "object_key_nfd_nfc.json": {"e\u0301": "NFD", "\u00e9": "NFC"},
    "object_same_key_different_values.json": ("DUPLICATE_KEY", 7),
    "object_same_key_same_value.json": ("DUPLICATE_KEY", 7),
    "object_same_key_unclear_values.json": ("DUPLICATE_KEY", 8),
    "string_1_escaped_invalid_codepoint.json": ("LONE_SURROGATE", 2),
    "string_1_invalid_codepoint.json": ("INVALID_UTF8", 2),
    "string_2_escaped_invalid_codepoints.json": ("LONE_SURROGATE", 2),
    "string_2_invalid_codepoints.json": ("INVALID_UTF8", 2),
    "string_3_escaped_invalid_codepoints.json": ("LONE_SURROGATE", 2),
    "string_3_invalid_codepoints.json": ("INVALID_UTF8", 2),
    "string_with_escaped_NULL.json": ["A\x00B"],
}


def outcome(impl: ModuleType, data: bytes | str) -> Any:
    """The value, or (code, pos) for a ParseError; any other exception propagates."""
    try:
        return impl.loads(data)
    except ParseError as err:
        return (err.code, err.pos)


def check(impl: ModuleType, data: bytes, expected: Any) -> None:
    got = outcome(impl, data)
    if isinstance(expected, tuple):
        assert got == expected
    else:
        assert same_value(got, expected), (got, expected)


def test_the_suite_is_complete() -> None:
    kinds = {prefix: [n for n in PARSING if n.startswith(prefix)] for prefix in ("y_", "n_", "i_")}
    assert (len(kinds["y_"]), len(kinds["n_"]), len(kinds["i_"])) == (95, 188, 35)
    assert sorted(kinds["i_"]) == sorted(IMPLEMENTATION_DEFINED)
    assert set(Y_REJECTED) <= set(kinds["y_"])
    assert sorted(p.name for p in (SUITE / "test_transform").iterdir()) == sorted(TRANSFORM)


@pytest.mark.parametrize("name", [n for n in PARSING if n.startswith("y_")])
def test_y_accepted(impl: ModuleType, name: str) -> None:
    data = (SUITE / "test_parsing" / name).read_bytes()
    if name in Y_REJECTED:
        assert outcome(impl, data) == Y_REJECTED[name]
        return
    expected = json.loads(data)
    assert same_value(impl.loads(data), expected)
    assert same_value(impl.loads(data.decode("utf-8")), expected)


@pytest.mark.parametrize("name", [n for n in PARSING if n.startswith("n_")])
def test_n_rejected(impl: ModuleType, name: str) -> None:
    data = (SUITE / "test_parsing" / name).read_bytes()
    with pytest.raises(ParseError) as info:
        impl.loads(data)
    err = info.value
    assert err.layer == "parse" and err.hint and 0 <= err.pos <= len(data)


@pytest.mark.parametrize("name", sorted(IMPLEMENTATION_DEFINED))
def test_i_documented(impl: ModuleType, name: str) -> None:
    check(impl, (SUITE / "test_parsing" / name).read_bytes(), IMPLEMENTATION_DEFINED[name])


@pytest.mark.parametrize("name", sorted(TRANSFORM))
def test_transform(impl: ModuleType, name: str) -> None:
    check(impl, (SUITE / "test_transform" / name).read_bytes(), TRANSFORM[name])


def test_n_files_as_text_agree_with_bytes(impl: ModuleType) -> None:
    """The ``n_`` files that are valid UTF-8 give the same error as ``str`` and as bytes."""
    compared = 0
    for name in PARSING:
        data = (SUITE / "test_parsing" / name).read_bytes()
        if not name.startswith("n_"):
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        assert outcome(impl, text) == outcome(impl, data), name
        compared += 1
    assert compared > 150
