"""Result checks written out in full: the size a result is held to, byte for
byte at every limit (its content as the ledger writes it, its effects' paths
and digests, their number), and the exact error each check of a result
gives (code, message, path, issues, retryable). A check that lets a result
through that the ledger should refuse, or refuses one it should keep,
changes one of these outcomes."""

from __future__ import annotations

import datetime
import decimal
import hashlib
import json
import os
import tracemalloc
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from decisions import Effect, FileEffects, Ledger, Limits, ResultError, Tool, ToolResult, open_ledger
from decisions.ledger import check_result, check_result_size, file_digest
from ledger_helpers import decision, new_run


class Report(BaseModel):
    lines: int
    note: str


class Stamped(BaseModel):
    """Fields JSON writes as text: measured as written, not as Python holds them."""

    at: datetime.datetime
    id: uuid.UUID
    amount: decimal.Decimal


def written_size(content: Any) -> int:
    """The bytes the ledger writes for ``content``: text as is, anything else as JSON."""
    if isinstance(content, BaseModel):
        content = content.model_dump(mode="json")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return len(text.encode("utf-8"))


CONTENTS = [
    "",
    "abc",
    "é",
    "日本語のテキスト",
    'quote " and \\ and \n and \x01',
    None,
    True,
    False,
    0,
    -12,
    1.5,
    [],
    {},
    [[]],
    [{}],
    ["a", "b", "c"],
    {"a": 1},
    {"é": ["x", None, True, False, 1.5, -3], "k": {"n": {}}},
    [[["deep"]], {"x": [1, 2, {"y": "z"}]}],
    {"": ""},
    {"long key " * 3: "v" * 20, "ü": "ü"},
    Report(lines=3, note="naïve"),
    Stamped(at=datetime.datetime(2026, 12, 4, 12, 0), id=uuid.UUID(int=7), amount=decimal.Decimal("1.50")),
]
SHARED = ["one list", {"in": "two places"}]
CONTENTS.append([SHARED, {"again": SHARED}, SHARED])  # written in full each time it appears


@pytest.mark.parametrize("content", CONTENTS, ids=[f"content{i}" for i in range(len(CONTENTS))])
def test_content_is_held_to_the_limit_byte_for_byte(content: Any) -> None:
    size = written_size(content)
    result = ToolResult("a", "ok", content)
    for limit in range(1, size + 2):  # a limit is one byte at least
        if limit >= size:
            check_result_size(result, Limits(max_result_bytes=limit))
            continue
        with pytest.raises(ResultError) as caught:
            check_result_size(result, Limits(max_result_bytes=limit))
        error = caught.value
        assert (error.code, error.path, error.call_id, error.retryable) == ("RESULT_TOO_LARGE", "$.content", "a", False)
        assert error.message == f"the result for 'a' has more than {limit} bytes of content"
        assert error.hint == "cut or summarise the tool's output before handing it back"


@pytest.mark.parametrize(
    "content",
    [["x", "y" * 50], {"a": "b", "c": "d" * 50}, [[1], [2], [3] * 30], ["ab", ["cd", ["ef" * 20]]]],
    ids=["list", "dict", "lists", "nested"],
)
def test_content_is_refused_once_a_prefix_reaches_the_limit(content: Any) -> None:
    """Whatever the limit falls on (a bracket, a separator, a key), content past it is refused."""
    size = written_size(content)
    for limit in range(1, size):
        with pytest.raises(ResultError):
            check_result_size(ToolResult("a", "ok", content), Limits(max_result_bytes=limit))
    check_result_size(ToolResult("a", "ok", content), Limits(max_result_bytes=size))


@pytest.mark.parametrize("content", ["é" * (4 << 20), ["é" * (4 << 20)]], ids=["text", "json"])
def test_text_longer_than_the_limit_is_refused_before_it_is_encoded(content: Any) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(ResultError) as caught:
            check_result_size(ToolResult("a", "ok", content), Limits(max_result_bytes=1 << 20))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.code == "RESULT_TOO_LARGE"
    assert peak < 1 << 20  # its 8 MiB of UTF-8 were never written


def test_every_key_counts_even_of_a_value_json_cannot_write() -> None:
    """A value JSON cannot write counts nothing, but its key does: such a
    result over the limit is refused as too large before it is written."""
    content = {"a": b"x", "b": b"y"}  # {"a": , "b": } has 14 bytes without the values
    for limit in range(1, 14):
        with pytest.raises(ResultError) as caught:
            check_result_size(ToolResult("a", "ok", content), Limits(max_result_bytes=limit))
        assert caught.value.code == "RESULT_TOO_LARGE"
    check_result_size(ToolResult("a", "ok", content), Limits(max_result_bytes=14))


def test_content_json_cannot_write_is_left_to_the_writer() -> None:
    """A cycle or a number too long to write counts nothing past it: ``text`` refuses it."""
    cycle: list[Any] = []
    cycle.append(cycle)
    huge = 10**5000
    for content in (cycle, [huge], {"k": huge}):
        result = ToolResult("a", "ok", content)
        check_result_size(result, Limits(max_result_bytes=16))
        with pytest.raises(ResultError) as caught:
            result.text  # noqa: B018
        assert (caught.value.code, caught.value.path) == ("RESULT_SCHEMA_MISMATCH", "$.content")


DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    "effects",
    [
        (Effect("a.txt", DIGEST),),
        (Effect("é/ü.txt", None), Effect("b", DIGEST)),
        (Effect("x" * 30, None), Effect("日本", DIGEST), Effect("c", None)),
    ],
    ids=["one", "two", "three"],
)
def test_effects_are_held_to_the_limit_byte_for_byte(effects: tuple[Effect, ...]) -> None:
    size = sum(len(e.path.encode("utf-8")) + len(e.digest or "") for e in effects)
    result = ToolResult("a", "ok", "", effects=effects)
    for limit in range(1, size + 2):
        limits = Limits(max_result_bytes=limit)
        if limit >= size:
            check_result_size(result, limits)
            continue
        with pytest.raises(ResultError) as caught:
            check_result_size(result, limits)
        error = caught.value
        assert (error.code, error.path, error.call_id, error.retryable) == ("RESULT_TOO_LARGE", "$.effects", "a", False)
        assert error.message == f"the result for 'a' claims effects of more than {limit} bytes"
        assert error.hint == "claim the files the call changed, not more (or raise Limits.max_result_effects)"
    count = len(effects)
    check_result_size(result, Limits(max_result_effects=count))
    if count == 1:  # a limit is one effect at least
        return
    with pytest.raises(ResultError) as caught:
        check_result_size(result, Limits(max_result_effects=count - 1))
    assert caught.value.message == f"the result for 'a' claims {count} effects, more than {count - 1}"
    assert caught.value.path == "$.effects"


def test_content_is_measured_before_effects() -> None:
    result = ToolResult("a", "ok", "x" * 10, effects=(Effect("y" * 10, None),))
    with pytest.raises(ResultError) as caught:
        check_result_size(result, Limits(max_result_bytes=5))
    assert caught.value.path == "$.content"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Effect("", None), "Effect.path must be a non-empty string"),
        (lambda: Effect(5, None), "Effect.path must be a non-empty string"),
        (lambda: Effect("a", "md5:00"), "Effect.digest must be 'sha256:<hex>' or None"),
        (lambda: Effect("a", b"sha256:00"), "Effect.digest must be 'sha256:<hex>' or None"),
        (lambda: ToolResult("a", "done"), "ToolResult.status must be 'ok', 'error' or 'partial'"),
        (lambda: ToolResult("", "ok"), "ToolResult.call_id must be a non-empty string"),
        (lambda: ToolResult(7, "ok"), "ToolResult.call_id must be a non-empty string"),
        (lambda: ToolResult("a", "ok", effects=[Effect("a")]), "ToolResult.effects must be a tuple of Effect"),
        (lambda: ToolResult("a", "ok", effects=("a",)), "ToolResult.effects must be a tuple of Effect"),
        (lambda: ToolResult("a", "ok", retry_safe=1), "ToolResult.retry_safe must be a bool"),
        (lambda: FileEffects("/ws", paths="path"), "FileEffects.paths must be a tuple of field names"),
    ],
)
def test_what_a_result_is_made_of(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_a_result_of_every_status_is_made() -> None:
    effects = (Effect("a", DIGEST), Effect("b"))
    made = [ToolResult("a", s, None, retry_safe=True, effects=effects) for s in ("ok", "error", "partial")]
    assert [(r.status, r.retry_safe, r.effects) for r in made] == [
        (s, True, effects) for s in ("ok", "error", "partial")
    ]


def test_a_file_digest_is_sha256_of_its_bytes_read_in_bounded_blocks(tmp_path: Path) -> None:
    (tmp_path / "small").write_bytes(b"hello")
    assert file_digest(tmp_path / "small") == "sha256:" + hashlib.sha256(b"hello").hexdigest()
    data = os.urandom(16 << 20)
    (tmp_path / "large").write_bytes(data)
    tracemalloc.start()
    try:
        digest = file_digest(tmp_path / "large")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert digest == "sha256:" + hashlib.sha256(data).hexdigest()
    assert peak < 3 << 20  # 1 MiB blocks, not the file at once


# ---------------------------------------------------------------- check_result


def refused(code: str, message: str, path: str) -> tuple[Any, ...]:
    issues = ({"path": path, "code": code.lower(), "expected": "the effect the result claims"},)
    return (code, message, path, issues, "report only what the tool really changed", False)


def shape(error: Any) -> tuple[Any, ...]:
    return (error.code, error.message, error.path, error.issues, error.hint, error.retryable)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    return root


def put(root: Path, name: str, text: str) -> Effect:
    (root / name).write_text(text)
    return Effect(name, file_digest(root / name))


def test_file_effects_observe_each_claimed_file(ws: Path, tmp_path: Path) -> None:
    check = FileEffects(str(ws), paths=("path", "more"))
    a = put(ws, "a.txt", "a")
    b = put(ws, "src/b.txt", "b")
    gone = Effect("gone.txt", None)
    arguments = {"path": "./a.txt", "more": ["src//b.txt", str(ws / "gone.txt"), 3, ""], "other": "x.txt"}
    assert check(arguments, ToolResult("c", "ok", effects=(a, b, gone))) == (a, b, gone)
    # a custom call's input text and a sensitive call's hidden arguments name no path
    assert check("write a.txt", ToolResult("c", "ok", effects=(a,))) == (a,)
    assert check(None, ToolResult("c", "ok")) == ()


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("digest", ("EFFECT_NOT_OBSERVED", "'a.txt' has {a}, not " + DIGEST, "$.effects[1]")),
        ("missing", ("EFFECT_NOT_OBSERVED", "'nope.txt' missing, not {a}", "$.effects[1]")),
        ("directory", ("EFFECT_NOT_OBSERVED", "'src' missing, not {a}", "$.effects[1]")),
        ("kept", ("EFFECT_NOT_OBSERVED", "'a.txt' was to be deleted but is still there", "$.effects[1]")),
        ("outside", ("EFFECT_NOT_OBSERVED", "effect path '../out.txt' is outside the workspace", "$.effects[1]")),
        ("nul", ("EFFECT_NOT_OBSERVED", "effect path 'a\\x00' cannot be looked up", "$.effects[1]")),
        ("unread", ("PARTIAL_EFFECT", "no effect observed on ['b.txt']", "$.effects")),
        ("none", ("EFFECT_NOT_OBSERVED", "no effect observed on ['a.txt', 'b.txt']", "$.effects")),
    ],
)
def test_each_effect_not_observed_is_named(ws: Path, tmp_path: Path, case: str, expected: tuple[str, str, str]) -> None:
    check = FileEffects(str(ws), paths=("path", "also"))
    a = put(ws, "a.txt", "a")
    (tmp_path / "out.txt").write_text("a")
    claimed = {
        "digest": Effect("a.txt", DIGEST),
        "missing": Effect("nope.txt", a.digest),
        "directory": Effect("src", a.digest),
        "kept": Effect("a.txt", None),
        "outside": Effect("../out.txt", a.digest),
        "nul": Effect("a\x00", a.digest),
    }
    effects: tuple[Effect, ...] = ()
    if case in claimed:
        effects = (a, claimed[case])
    elif case == "unread":
        effects = (a,)
    result = ToolResult("c", "ok", effects=effects)
    with pytest.raises(ResultError) as caught:
        check({"path": "a.txt", "also": ["b.txt"]}, result)
    code, message, path = expected
    assert shape(caught.value) == refused(code, message.format(a=a.digest), path)
    error, observed = check_result({"path": "a.txt", "also": ["b.txt"]}, result, Tool(name="w", effects=check))
    assert (shape(error), observed) == (refused(code, message.format(a=a.digest), path), ())


def test_an_unreadable_claimed_file_is_not_observed(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = put(ws, "a.txt", "a")

    def unreadable(path: Any) -> str:
        raise PermissionError(path)

    monkeypatch.setattr("decisions.ledger.results.file_digest", unreadable)
    with pytest.raises(ResultError) as caught:
        FileEffects(str(ws))({"path": "a.txt"}, ToolResult("c", "ok", effects=(a,)))
    assert shape(caught.value) == refused(
        "EFFECT_NOT_OBSERVED", "'a.txt' cannot be read (PermissionError)", "$.effects[0]"
    )


def observed_as_claimed(arguments: Mapping[str, Any] | str | None, result: ToolResult) -> Sequence[Effect]:
    return result.effects


def test_check_result_says_why_each_result_fails(ws: Path) -> None:
    a = put(ws, "a.txt", "a")
    files = Tool(name="w", effects=FileEffects(str(ws)), returns={"type": "object", "required": ["n"]})
    schema_only = Tool(name="n", returns=Report, side_effects=False)
    args = {"path": "a.txt"}

    error, observed = check_result(args, ToolResult("c", "error", "boom", retry_safe=True, effects=(a,)), files)
    assert (error.code, error.message, error.path, error.retryable, observed) == (
        "TOOL_ERROR",
        "the tool reported an error",
        "$.status",
        True,
        (),
    )
    error, _ = check_result(args, ToolResult("c", "error", "boom"), files)
    assert error is not None and error.retryable is False

    error, observed = check_result(args, ToolResult("c", "partial", "half", retry_safe=True, effects=(a,)), files)
    assert (error.code, error.message, error.path, error.retryable, observed) == (
        "PARTIAL_EFFECT",
        "the tool reported a partial result",
        "$.status",
        False,
        (a,),
    )
    # a partial result is not held to the schema: it failed already
    error, _ = check_result(args, ToolResult("c", "partial", "not an object", effects=(a,)), files)
    assert error is not None and error.code == "PARTIAL_EFFECT"

    error, observed = check_result(args, ToolResult("c", "ok", {"m": 1}, effects=(a,)), files)
    assert (error.code, error.path, observed) == ("RESULT_SCHEMA_MISMATCH", "$.content.n", (a,))
    assert error.message == "the result does not match the tool's result schema: missing at $.content.n"
    assert [i["code"] for i in error.issues] == ["missing"]

    assert check_result(args, ToolResult("c", "ok", {"n": 1}, effects=(a,)), files) == (None, (a,))
    assert check_result(None, ToolResult("c", "ok", {"lines": 1, "note": ""}), schema_only) == (None, ())
    error, _ = check_result(None, ToolResult("c", "ok", {"lines": "x", "note": ""}), schema_only)
    assert error is not None and (error.code, error.path) == ("RESULT_SCHEMA_MISMATCH", "$.content.lines")
    # no declaration: an ok result passes and its effects are not taken as observed
    assert check_result(args, ToolResult("c", "ok", "x", effects=(a,)), None) == (None, ())
    assert check_result(args, ToolResult("c", "ok", "x", effects=(a,)), Tool(name="t")) == (None, ())


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (lambda a, r: 1 / 0, "the effect check raised ZeroDivisionError"),
        (
            lambda a, r: [Effect("a.txt", None), "a.txt"],
            "the effect check returned something other than Effect objects",
        ),
    ],
)
def test_a_broken_effect_check_observes_nothing(check: Any, message: str) -> None:
    error, observed = check_result({}, ToolResult("c", "ok", "x"), Tool(name="t", effects=check))
    assert (shape(error), observed) == (refused("EFFECT_NOT_OBSERVED", message, "$.effects"), ())


def test_a_custom_effect_check_is_trusted_for_what_it_returns() -> None:
    effect = Effect("remote/a", DIGEST)
    tool = Tool(name="t", effects=observed_as_claimed)
    assert check_result({}, ToolResult("c", "ok", "x", effects=(effect,)), tool) == (None, (effect,))


# ---------------------------------------------------------------- through the ledger


@pytest.fixture
def ledger(url: str, ws: Path) -> Iterator[Ledger]:
    tools = [Tool(name="write_file", effects=FileEffects(str(ws)))]
    with open_ledger(url, tools=tools, limits=Limits(max_result_bytes=128)) as opened:
        yield opened


def test_a_commit_holds_the_result_to_the_ledgers_limit(ledger: Ledger, ws: Path) -> None:
    run = new_run()
    ledger.record(decision(("a", "write_file", "allowed"), ("b", "write_file", "allowed")), run_id=run)
    a = put(ws, "a.txt", "a")
    fits = ToolResult("a", "ok", "x" * 128, effects=(a,))
    assert ledger.commit(ledger.claim("a", run_id=run, worker="w"), fits).state == "committed"
    b = put(ws, "b.txt", "b")
    entry = ledger.commit(ledger.claim("b", run_id=run, worker="w"), ToolResult("b", "ok", "x" * 129, effects=(b,)))
    assert (entry.state, entry.result, entry.effects) == ("failed", None, ())
    assert entry.error is not None and (entry.error.code, entry.error.path) == ("RESULT_TOO_LARGE", "$.content")
