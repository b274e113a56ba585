"""Parse records and redaction: canaries planted everywhere a secret could
travel must never come out of records, prompts, error dicts or reprs."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest

import decisions
from decisions.errors import ParseError, SchemaError, StreamError
from decisions.recover.repair import repair_prompt
from decisions.recover.trace import RECORD_FIELDS, REDACTED, Redactor, Stopwatch, digest, parse_record
from decisions.request.definitions import ToolDefinition
from decisions.request.fragments import tool_fragment
from decisions.types import NormalizedResponse, TextItem, ToolCallItem

OPENAI_KEY = "sk-proj-CANARYopenaiKEY0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-api03-CANARYanthropicKEY0123456789"
GOOGLE_KEY = "AIzaSyCANARYgoogleKEY0123456789abcdefg"
BEARER = "Bearer CANARYbearerTOKEN.abc.def"
PASSWORD = "CANARY-password-value"
CANARIES = ("CANARY",)


def _clean(*outputs: object) -> None:
    for output in outputs:
        text = (
            output
            if isinstance(output, str)
            else json.dumps(output, default=repr)
            if isinstance(output, (dict, list))
            else repr(output)
        )
        for canary in CANARIES:
            assert canary not in text, f"secret leaked: {text[:300]}"


def test_redact_text_masks_every_credential_shape() -> None:
    redactor = Redactor()
    text = (
        f"key {OPENAI_KEY} and {ANTHROPIC_KEY}; google={GOOGLE_KEY}\n"
        f"Authorization: {BEARER}\napi_key=CANARYplainAPIkey123 x-api-key: 'CANARYheaderKEY99'"
    )
    out = redactor.redact_text(text)
    _clean(out)
    assert out.count(REDACTED) >= 6
    assert "key " in out and "Authorization" in out  # only the secret is masked


def test_redact_nested_data_and_configured_fields() -> None:
    redactor = Redactor().with_fields({"session_cookie"})
    data = {
        "args": {"path": "a.txt", "password": PASSWORD, "Session-Cookie": "CANARYcookie"},
        "list": [OPENAI_KEY, {"token": "CANARYtok"}],
        "n": 3,
    }
    out = redactor.redact(data)
    _clean(out)
    assert out["args"]["path"] == "a.txt" and out["n"] == 3
    assert out["args"]["password"] == REDACTED and out["args"]["Session-Cookie"] == REDACTED
    assert data["args"]["password"] == PASSWORD  # a copy; the input is untouched
    deep: object = {"api_key": "x"}
    for _ in range(5000):  # iterative: deep nesting costs no stack
        deep = [deep]
    redactor.redact(deep)


def _response(text: str) -> NormalizedResponse:
    return NormalizedResponse(
        provider="openai-chat",
        response_id="chatcmpl-1",
        model="gpt-test",
        items=(
            TextItem(item_id="t", text=text),
            ToolCallItem(
                item_id="c",
                call_id="call_1",
                name="login",
                arguments=json.dumps({"password": PASSWORD, "key": OPENAI_KEY}),
            ),
        ),
        finish_reason="tool_calls",
    )


def test_parse_record_shape_and_digest() -> None:
    raw = b'{"id":"chatcmpl-1","secret":"' + OPENAI_KEY.encode() + b'"}'
    _, request = tool_fragment(
        ToolDefinition(
            "login", {"type": "object", "properties": {"password": {"type": "string"}}, "required": ["password"]}
        ),
        "openai-chat",
    )
    watch = Stopwatch()
    record = parse_record(
        response=_response("hi"),
        raw=raw,
        request=request,
        event_count=12,
        parse_duration_ms=watch.ms(),
        validation_duration_ms=0.5,
        run_id="run_42",
        repair_attempt=1,
    )
    assert tuple(record) == RECORD_FIELDS
    assert record["raw_digest"] == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert record["raw_bytes"] == len(raw)
    assert record["provider"] == "openai-chat" and record["response_id"] == "chatcmpl-1"
    assert record["model"] == "gpt-test" and record["finish_reason"] == "tool_calls"
    assert record["sent_schema_digest"] == request.sent_digest
    assert record["repair_attempt"] == 1 and record["run_id"] == "run_42" and record["event_count"] == 12
    assert record["library_version"] == decisions.__version__
    for value in record.values():
        assert value is None or isinstance(value, (str, int, float, bool))
    assert json.loads(json.dumps(record)) == record
    _clean(record)  # the raw body is referenced by digest, never copied
    assert digest("é") == "sha256:" + hashlib.sha256("é".encode()).hexdigest()


class _LyingBytes(bytes):
    def __bytes__(self) -> bytes:
        return b"other"


class _LyingStr(str):
    def encode(self, *args: Any, **kwargs: Any) -> bytes:
        return b"other"


def test_digest_and_size_of_what_the_raw_response_holds() -> None:
    """A bytes or str subclass is digested and measured by the bytes or
    characters it holds, not by its own ``__bytes__`` or ``encode``."""
    for raw, held in (
        (_LyingBytes(b"body"), b"body"),
        (_LyingStr("bodé"), "bodé".encode()),
        (bytearray(b"body"), b"body"),
        (memoryview(b"xbody")[1:], b"body"),
    ):
        assert digest(raw) == "sha256:" + hashlib.sha256(held).hexdigest()
        record = parse_record(raw=raw)
        assert record["raw_bytes"] == len(held) and record["raw_digest"] == digest(held)


class _ToolDecision:
    def __init__(self, n: int) -> None:
        self.calls = tuple(range(n))
        self.repaired = ("invalid_escapes",)


class _FinalDecision:
    value = {"a": 1}


def test_parse_record_decision_and_error_fields() -> None:
    tool = parse_record(
        decision=_ToolDecision(2), strategy="json_text", schema_id="agent.decision", schema_version="2.1.0"
    )
    assert (tool["decision_kind"], tool["tool_call_count"], tool["repaired"]) == ("tool", 2, "invalid_escapes")
    assert tool["schema_id"] == "agent.decision" and tool["schema_version"] == "2.1.0"
    final = parse_record(decision=_FinalDecision())
    assert (final["decision_kind"], final["tool_call_count"], final["repaired"]) == ("final", 0, None)
    error = SchemaError("SCHEMA_MISMATCH", path="$.calls[0].arguments.path")
    failed = parse_record(error=error, provider="anthropic")
    assert (failed["error_layer"], failed["error_code"], failed["error_path"]) == (
        "schema",
        "SCHEMA_MISMATCH",
        "$.calls[0].arguments.path",
    )
    assert failed["decision_kind"] is None and failed["provider"] == "anthropic"


def test_canaries_never_leave_through_any_output() -> None:
    secret_text = f'{{"token": "{OPENAI_KEY}", "q": "\\d {ANTHROPIC_KEY} {GOOGLE_KEY}"}}'
    offset = secret_text.index("\\d")
    parse_error = ParseError("INVALID_ESCAPE", doc=secret_text, pos=offset)
    schema_error = SchemaError(
        "SCHEMA_MISMATCH",
        f"bad value {OPENAI_KEY}",
        issues=({"path": "$.key", "code": "pattern", "expected": GOOGLE_KEY},),
        hint=f"use {BEARER}",
    )
    stream_error = StreamError("RESPONSE_ERROR", f"upstream said {ANTHROPIC_KEY}")
    redactor = Redactor()
    outputs: list[object] = [
        repair_prompt(parse_error),
        repair_prompt(schema_error),
        redactor.error_dict(parse_error),
        redactor.error_dict(schema_error),
        redactor.error_dict(stream_error),
        parse_record(response=_response(f"my key is {OPENAI_KEY}"), error=schema_error, raw=secret_text),
        repr(parse_error),
        repr(schema_error),
        repr(stream_error),
        repr(redactor),
    ]
    _clean(*outputs)
    # the prompt still shows the place of the error and the fix
    prompt = outputs[0]
    assert isinstance(prompt, str) and "\\\\d" in prompt and "^" in prompt


def test_stopwatch_measures_milliseconds() -> None:
    watch = Stopwatch()
    first = watch.ms()
    assert first >= 0.0
    watch.start()
    assert watch.ms() >= 0.0


@pytest.mark.parametrize("key", [OPENAI_KEY, ANTHROPIC_KEY, GOOGLE_KEY])
def test_redaction_pattern_is_not_fooled_by_surrounding_json(key: str) -> None:
    text = json.dumps({"k": key, "url": f"https://x/?key={key}"})
    assert not re.search("CANARY", Redactor().redact_text(text))


def test_record_of_a_real_decision_and_a_real_failure() -> None:
    from decisions import decide

    response = _response("")
    watch = Stopwatch()
    decision = decide(response)
    record = parse_record(
        response=response, decision=decision, validation_duration_ms=watch.ms(), strategy="native_structured_output"
    )
    assert (record["decision_kind"], record["tool_call_count"]) == ("tool", 1)
    _clean(record)
    cut = NormalizedResponse(
        provider="anthropic", response_id="msg_1", model="claude", items=(), finish_reason="length"
    )
    with pytest.raises(decisions.OutputError) as info:
        decide(cut)
    failed = parse_record(response=cut, error=info.value)
    assert (failed["error_layer"], failed["error_code"]) == ("stream", "INCOMPLETE_RESPONSE")
    assert failed["finish_reason"] == "length" and failed["decision_kind"] is None


def test_decide_errors_never_echo_argument_values() -> None:
    from decisions import Tool, ToolRegistry, decide

    registry = ToolRegistry(
        [
            Tool(
                name="login",
                parameters={
                    "type": "object",
                    "properties": {"password": {"type": "string", "minLength": 64}, "pin": {"type": "integer"}},
                    "required": ["password", "pin"],
                    "additionalProperties": False,
                },
            )
        ]
    )
    arguments = json.dumps({"password": PASSWORD, "pin": OPENAI_KEY, "note": BEARER})
    response = NormalizedResponse(
        provider="openai-chat",
        response_id="r",
        model="m",
        finish_reason="tool_calls",
        items=(ToolCallItem(item_id="i", call_id="c", name="login", arguments=arguments),),
    )
    with pytest.raises(SchemaError) as info:
        decide(response, tools=registry)
    error = info.value
    _clean(
        str(error),
        repr(error),
        error.to_dict(),
        repair_prompt(error, target="tool_call"),
        parse_record(response=response, error=error, raw=arguments),
    )
