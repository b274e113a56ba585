"""One hint table: every parse-layer code has exactly one row in
``_json_errors.HINTS``, the error's hint and the repair prompt's fix line are
both rendered from it (on both backends), and no raise site writes its own
text for a code the table holds."""

from __future__ import annotations

import ast
import json
import string
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pytest

import decisions
from decisions import Limits
from decisions._json_errors import HINTS, fix_text
from decisions.errors import ERROR_CODES, OutputError, ParseError
from decisions.recover.repair import repair_prompt
from decisions.request.textcalls import parse_json_text, parse_tool_calls
from decisions.validate.decide import parse_arguments

PACKAGE = Path(decisions.__file__).parent
JSON_ERRORS = PACKAGE / "_json_errors.py"

# one input per code the JSON parser reports, with the limits that make it fail
PARSER_CASES: dict[str, tuple[str | bytes, Limits | None]] = {
    "EMPTY_INPUT": ("  ", None),
    "INVALID_UTF8": (b'["\xff"]', None),
    "UTF16_INPUT": ("{}".encode("utf-16-le"), None),
    "BOM": ("\ufeff{}", None),
    "UNEXPECTED_END": ("[1, 2", None),
    "UNEXPECTED_CHARACTER": ("[?]", None),
    "TRAILING_CONTENT": ("{} x", None),
    "MARKDOWN_FENCE": ("```json\n{}\n```", None),
    "COMMENT": ("[1, // one\n2]", None),
    "SINGLE_QUOTES": ("{'a': 1}", None),
    "TRAILING_COMMA": ("[1,]", None),
    "KEY_NOT_STRING": ("{a: 1}", None),
    "DUPLICATE_KEY": ('{"a": 1, "a": 2}', None),
    "INVALID_NUMBER": ("[1.]", None),
    "LEADING_ZERO": ("[07]", None),
    "NAN_OR_INFINITY": ("[-Infinity]", None),
    "NUMBER_OUT_OF_RANGE": ("[1e400]", None),
    "NUMBER_TOO_LONG": ("[" + "1" * 30 + "]", Limits(max_number_length=10)),
    "INVALID_ESCAPE": ('{"p": "C:\\dir"}', None),
    "INVALID_UNICODE_ESCAPE": ('"\\u12x4"', None),
    "LONE_SURROGATE": ('"\\ud800"', None),
    "CONTROL_CHARACTER": ('"a\tb"', None),
    "DOCUMENT_TOO_LARGE": ("[" + "1," * 50 + "1]", Limits(max_document_bytes=20)),
    "DEPTH_EXCEEDED": ("[[[1]]]", Limits(max_depth=2)),
    "STRING_TOO_LONG": ('["abcdef"]', Limits(max_string_bytes=2)),
    "TOO_MANY_ITEMS": ("[1, 2, 3]", Limits(max_array_items=2)),
    "TOO_MANY_MEMBERS": ('{"a": 1, "b": 2}', Limits(max_object_members=1)),
    "TOO_MANY_VALUES": ("[1, 2, 3]", Limits(max_values=2)),
}

# the codes raised on a call's arguments, outside the parser, by every site
ARGUMENT_CASES: list[tuple[str, Callable[[], Any]]] = [
    ("ARGUMENTS_NOT_OBJECT", lambda: parse_arguments("[1]")),
    ("ARGUMENTS_NOT_OBJECT", lambda: parse_tool_calls('<tool_call>{"name": "f", "arguments": null}</tool_call>')),
    ("DOUBLE_ENCODED_JSON", lambda: parse_arguments(json.dumps('{"a": 1}'))),
    (
        "DOUBLE_ENCODED_JSON",
        lambda: parse_tool_calls('<tool_call>{"name": "f", "arguments": "{}"}</tool_call>'),
    ),
    ("MARKDOWN_FENCE", lambda: parse_json_text('here:\n```json\n{"a": 1}\n```')),
]


def _table_keys() -> list[str]:
    """The keys of the ``HINTS`` literal as written (a repeated key would be
    silently dropped by the dict, so it is counted in the source)."""
    tree = ast.parse(JSON_ERRORS.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "HINTS":
            assert isinstance(node.value, ast.Dict)
            return [key.value for key in node.value.keys if isinstance(key, ast.Constant)]
    raise AssertionError("no HINTS table in _json_errors.py")


def _fail(fn: Callable[[], Any]) -> OutputError:
    with pytest.raises(OutputError) as info:
        fn()
    return info.value


def test_every_parse_code_has_exactly_one_hint() -> None:
    keys = _table_keys()
    parse_codes = sorted(code for code, row in ERROR_CODES.items() if row.layer == "parse")
    assert sorted(keys) == parse_codes  # no code missing, none extra, none twice
    assert set(PARSER_CASES) | {code for code, _ in ARGUMENT_CASES} == set(parse_codes)


def test_the_fix_names_no_position_or_limit() -> None:
    """The repair prompt renders the fix from the error alone."""
    for code, row in HINTS.items():
        fields = {name for _, name, _, _ in string.Formatter().parse(row.fix) if name}
        assert not fields & {"where", "limits"} and not any(f.startswith("limits.") for f in fields), code
        assert row.fix and not row.fix.endswith("."), code


@pytest.mark.parametrize("code", sorted(PARSER_CASES))
def test_the_hint_and_the_repair_fix_say_the_same(impl: ModuleType, code: str) -> None:
    data, limits = PARSER_CASES[code]
    with pytest.raises(ParseError) as info:
        impl.loads(data, limits=limits) if limits is not None else impl.loads(data)
    error = info.value
    assert error.code == code
    row = HINTS[code]
    fix = fix_text(code, error.doc or "", error.pos or 0)
    assert fix is not None and row.problem is not None
    assert error.hint is not None and error.hint.endswith(": " + fix)
    assert error.hint.startswith(row.problem.split("{", 1)[0])
    if not error.retryable:
        return  # a limit: never sent back to the model, so no prompt to compare
    prompt = repair_prompt(error, max_chars=10_000)
    assert f"Fix: {fix}" in prompt
    assert prompt.count("Fix: ") == 1


@pytest.mark.parametrize(("code", "fn"), ARGUMENT_CASES)
def test_argument_checks_use_the_table(code: str, fn: Callable[[], Any]) -> None:
    error = _fail(fn)
    assert error.code == code and error.hint == fix_text(code)
    assert isinstance(error, ParseError)
    assert f"Fix: {fix_text(code, error.doc or '', error.pos or 0)}." in repair_prompt(error, max_chars=10_000)


def _literal_hints() -> list[tuple[str, int, str]]:
    """``(file, line, code)`` of every call that raises a table code with a
    hint written in place (a string literal or f-string)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == JSON_ERRORS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
                continue
            code = node.args[0].value
            hints = [kw.value for kw in node.keywords if kw.arg == "hint"]
            if code in HINTS and hints and isinstance(hints[0], (ast.Constant, ast.JoinedStr)):
                found.append((str(path.relative_to(PACKAGE)), node.lineno, code))
    return found


# The <tool_call> grammar's own hints (close the block, one call per block, the
# reply's character limit, the exact tags): about the wrapper, not about JSON.
TEXTCALL_GRAMMAR = [
    "DOCUMENT_TOO_LARGE",
    "UNEXPECTED_END",
    "UNEXPECTED_END",
    "TRAILING_CONTENT",
    "UNEXPECTED_CHARACTER",
    "UNEXPECTED_CHARACTER",
    "UNEXPECTED_END",
    "MARKDOWN_FENCE",
    "UNEXPECTED_CHARACTER",
]


def test_no_raise_site_writes_its_own_hint_for_a_table_code() -> None:
    # validate/decide.py still writes the table's text in place (held equal to
    # the table by test_argument_checks_use_the_table); text calls keep the
    # hints of their own grammar; nothing else may write one.
    found = sorted(_literal_hints(), key=lambda site: (site[0], site[1]))
    assert [code for f, _, code in found if f == "request/textcalls.py"] == TEXTCALL_GRAMMAR
    assert sorted(code for f, _, code in found if f == "validate/decide.py") == [
        "ARGUMENTS_NOT_OBJECT",
        "DOUBLE_ENCODED_JSON",
    ]
    assert {f for f, _, _ in found} <= {"request/textcalls.py", "validate/decide.py"}


@pytest.mark.parametrize(
    "reply",
    [
        '<tool_call>{"name": "f", "arguments": {}}',
        '<tool_call>{"name": "f", "arguments": {}} {"name": "g"}</tool_call>',
        '<tool_call>```json\n{"name": "f", "arguments": {}}\n```</tool_call>',
    ],
)
def test_a_grammar_hint_is_what_the_repair_prompt_says(reply: str) -> None:
    error = _fail(lambda: parse_tool_calls(reply))
    assert isinstance(error, ParseError) and error.hint and error.retryable
    assert f"Fix: {error.hint}." in repair_prompt(error, max_chars=10_000)
