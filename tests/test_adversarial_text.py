"""Adversarial review of the text paths: one section per class of mistake.

Every case runs on both backends (the ``impl`` fixture points
``decisions._backend.impl`` at the backend under test, so the strict parser
inside the text fallback is that backend's) and asserts exact codes.

1. Quoted ``<tool_call>`` blocks: a block inside a Markdown code span, fenced
   or indented code block, block quote or verbatim HTML block is text, never
   a call (CommonMark's rules, checked against cmark's answers).
2. Secrets: no credential survives, whole or as a fragment of 8 characters,
   in anything an error or a record carries.
"""

from __future__ import annotations

import json
import pickle
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import pytest

import decisions
from decisions import _backend
from decisions.errors import OutputError, ParseError, PolicyError, SchemaError, StreamError, new_error
from decisions.recover.repair import repair_prompt
from decisions.recover.trace import Redactor, parse_record
from decisions.request._markdown import QuotedRanges
from decisions.request.textcalls import parse_tool_calls, tool_calls_response
from decisions.types import NormalizedResponse, TextItem, ToolCallItem

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _backend_under_test(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setattr(_backend, "impl", impl)
    return impl


# ================================================================ 1. quoted <tool_call> blocks

CALL = '<tool_call>{"name": "delete_file", "arguments": {"path": "/etc/passwd"}}</tool_call>'
OTHER = '<tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}}</tool_call>'

#: (label, text): the CALL in each is quoted, so the reply holds no call.
QUOTED: list[tuple[str, str]] = [
    ("code span", f"Write `{CALL}` to delete."),
    ("code span of two backticks around one", f"Write ``x ` {CALL}`` to delete."),
    ("code span of five backticks", f"`````{CALL}`````"),
    ("code span over two lines", f"Write `the block\n{CALL}\nlike that` to call."),
    ("code span after an escaped backtick", f"\\` then `{CALL}`"),
    ("code span opened after a literal run", f"`` alone, then `{CALL}`"),
    ("fence", f"```\n{CALL}\n```"),
    ("fence with an info string", f"```json title=example\n{CALL}\n```\nDone."),
    ("tilde fence", f"~~~\n{CALL}\n~~~"),
    ("tilde fence with backticks in its info", f"~~~ `x`\n{CALL}\n~~~"),
    ("long fence closed only by a long enough one", f"````\n```\n{CALL}\n````"),
    ("fence indented three spaces", f"   ```\n{CALL}\n   ```"),
    ("unclosed fence runs to the end", f"Example:\n```\n{CALL}"),
    ("fence interrupting a paragraph", f"See:\n```\n{CALL}\n```"),
    ("fence in a list item", f"1. Example:\n   ```\n   {CALL}\n   ```"),
    ("fence on the marker line of a list item", f"10. ```\n    {CALL}\n    ```"),
    ("indented code block", f"Example:\n\n    {CALL}"),
    ("tab-indented code block", f"Example:\n\n\t{CALL}"),
    ("block quote", f"> {CALL}"),
    ("block quote without a space", f">{CALL}"),
    ("nested block quote", f"> > {CALL}"),
    ("lazy continuation of a quoted paragraph", f"> The page said:\n{CALL}"),
    ("block quote in a list item", f"- > {CALL}"),
    ("fence in a block quote", f"> ```\n> {CALL}\n> ```"),
    ("pre block", f"<pre>\n{CALL}\n</pre>"),
    ("HTML comment block", f"<!--\n{CALL}\n-->"),
    ("script block", f"<script>\n{CALL}\n</script>"),
]

#: (label, text, names): a call that stands on its own, with quoted text around it.
STANDING: list[tuple[str, str, list[str]]] = [
    ("plain", CALL, ["delete_file"]),
    ("after a closed code span", f"Use `x` like this: {CALL}", ["delete_file"]),
    ("after an unmatched backtick", f"It costs 5` so: {CALL}", ["delete_file"]),
    ("after an escaped backtick pair", f"\\`x\\` {CALL}", ["delete_file"]),
    ("after a closed fence", f"```\n{OTHER}\n```\n{CALL}", ["delete_file"]),
    ("after a block quote and a blank line", f"> {OTHER}\n\n{CALL}", ["delete_file"]),
    ("indented continuation of a paragraph", f"Calling:\n    {CALL}", ["delete_file"]),
    ("in a list item paragraph", f"1.  Step:\n\n    {CALL}", ["delete_file"]),
    ("in a heading", f"# {CALL}", ["delete_file"]),
    ("code span across a paragraph break is no span", f"a `b\n\n{CALL}\n\nc` d", ["delete_file"]),
    ("after a reasoning block", f"<think>\nplan\n</think>\n{CALL}", ["delete_file"]),
    # the JSON of a call is never read as Markdown: its backtick opens no span
    (
        "backtick inside a call's argument",
        '<tool_call>{"name": "sh", "arguments": {"cmd": "echo `date"}}</tool_call>\n' + CALL + " and a ` later",
        ["sh", "delete_file"],
    ),
    (
        "blank line and indentation inside a call's JSON",
        '<tool_call>\n{"name": "sh",\n\n    "arguments": {}}\n    </tool_call>\n    ' + CALL,
        ["sh", "delete_file"],
    ),
    ("quoted and standing in one reply", f"Format: `{OTHER}`\n\n{CALL}", ["delete_file"]),
]


def _stop(text: str, *extra: Any) -> NormalizedResponse:
    return NormalizedResponse(
        provider="openai-chat",
        response_id="r",
        model="m",
        finish_reason="stop",
        items=(TextItem(item_id="t", text=text), *extra),
    )


@pytest.mark.parametrize(("label", "text"), QUOTED, ids=[c[0] for c in QUOTED])
def test_quoted_block_is_text(label: str, text: str) -> None:
    found = parse_tool_calls(text)
    assert found.calls == () and found.text == text
    response = _stop(text)
    assert tool_calls_response(response) is response
    decision = decisions.decide(response)
    assert isinstance(decision, decisions.FinalDecision) and decision.value == text


@pytest.mark.parametrize(("label", "text", "names"), STANDING, ids=[c[0] for c in STANDING])
def test_standing_block_is_a_call(label: str, text: str, names: list[str]) -> None:
    found = parse_tool_calls(text)
    assert [call.name for call in found.calls] == names
    for call in found.calls:
        assert text[call.start : call.end].startswith("<tool_call>") and text[call.start : call.end].endswith(
            "</tool_call>"
        )
    response = tool_calls_response(_stop(text))
    assert [call.name for call in response.tool_calls] == names


def test_quoted_text_is_kept_whole() -> None:
    text = f"Format: `{OTHER}`\n\n{CALL}\n> {OTHER}"
    found = parse_tool_calls(text)
    assert [call.name for call in found.calls] == ["delete_file"]
    assert found.text == f"Format: `{OTHER}`\n\n\n> {OTHER}"


@pytest.mark.parametrize(
    ("text", "code", "offset"),
    [
        ("a stray </tool_call> here", "UNEXPECTED_CHARACTER", 8),
        (
            f"`</tool_call>` then {CALL} then </tool_call>",
            "UNEXPECTED_CHARACTER",
            len(f"`</tool_call>` then {CALL} then "),
        ),
        (f"> {CALL}\n\n<tool_call>", "UNEXPECTED_END", len(f"> {CALL}\n\n<tool_call>")),
        ('`x` <tool_call>{"name": "a"}</tool_call>', "SCHEMA_MISMATCH", 15),
        ('`x` <tool_call>{"name": "a", "arguments": {"p": "\\d"}}</tool_call>', "INVALID_ESCAPE", 49),
    ],
)
def test_standing_blocks_are_still_strict(text: str, code: str, offset: int) -> None:
    with pytest.raises(OutputError) as info:
        parse_tool_calls(text)
    assert (info.value.code, info.value.offset) == (code, offset), str(info.value)


def test_quoted_stray_close_tag_is_text() -> None:
    for text in ("`</tool_call>`", "```\n</tool_call>\n```", "> </tool_call>"):
        assert parse_tool_calls(text).calls == ()


def test_cmark_reference_answers() -> None:
    """400 random Markdown shapes around a tag, with cmark's answer to
    "is the tag inside a code span, code block, block quote or verbatim
    HTML block" (generated with the reference implementation)."""
    data = json.loads((FIXTURES / "markdown_quoting.json").read_text())
    wrong = [
        case["text"]
        for case in data["cases"]
        if QuotedRanges(case["text"]).quoted(case["text"].index("<tool_call>")) != case["quoted"]
    ]
    assert len(data["cases"]) == 400 and wrong == []


def test_native_and_text_calls_together_is_ambiguous() -> None:
    native = ToolCallItem(item_id="c", call_id="call_1", name="read_file", arguments='{"path": "a.txt"}')
    with pytest.raises(SchemaError) as info:
        tool_calls_response(_stop(f"Also: {CALL}", native))
    assert (info.value.code, info.value.path, info.value.offset) == ("AMBIGUOUS_DECISION", "$", 6)
    # a quoted block beside native calls is text: nothing is ambiguous
    response = _stop(f"Also: `{CALL}`", native)
    assert tool_calls_response(response) is response


def test_the_text_calls_of_two_responses_of_one_run_do_not_share_ids() -> None:
    """Generated ids carry the response id, as the providers' do: the second
    turn of a run is a new call, not a replay of the first."""
    run = decisions.Run()
    ids = []
    for response_id in ("r1", "r2"):
        response = NormalizedResponse(
            provider="openai-chat",
            response_id=response_id,
            model="m",
            finish_reason="stop",
            items=(TextItem(item_id="t", text=OTHER),),
        )
        decision = decisions.decide(tool_calls_response(response), run=run)
        assert isinstance(decision, decisions.ToolDecision) and decision.executable
        ids.append(decision.calls[0].call_id)
    assert ids == ["r1:text_call_0", "r2:text_call_0"]
    # the same response decided twice is still a replay
    again = NormalizedResponse(
        provider="openai-chat",
        response_id="r1",
        model="m",
        finish_reason="stop",
        items=(TextItem(item_id="t", text=OTHER),),
    )
    with pytest.raises(PolicyError) as info:
        decisions.decide(tool_calls_response(again), run=run)
    assert info.value.code == "CALL_ALREADY_DECIDED"


def _gemini_body(path: str) -> str:
    """A Gemini body with no ``responseId``: its call id is generated."""
    call = {"functionCall": {"name": "read_file", "args": {"path": path}}}
    return json.dumps({"candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP"}]})


def _anonymous_text(path: str) -> NormalizedResponse:
    """A response with no id whose one call is written into its text."""
    text = OTHER.replace("a.txt", path)
    item = TextItem(item_id="t", text=text)
    return tool_calls_response(
        NormalizedResponse(provider="openai-chat", response_id=None, model="m", finish_reason="stop", items=(item,))
    )


@pytest.mark.parametrize(
    "turn",
    [lambda path: decisions.normalize(_gemini_body(path), provider="gemini"), _anonymous_text],
    ids=["gemini", "text-calls"],
)
def test_generated_ids_of_responses_without_an_id_tell_turns_apart(turn: Callable[[str], Any]) -> None:
    """Without a response id, ``call_0`` is in every turn: each response's
    generated ids carry a digest of it, so the run takes the next turn and the
    ledger keeps both calls apart, while the same response decided again is
    the replay it is (and deciding is deterministic)."""
    run = decisions.Run()
    ledger = decisions.open_ledger("sqlite://")
    ids = []
    for index in range(2):
        decision = decisions.decide(turn(f"{index}.txt"), run=run)
        assert isinstance(decision, decisions.ToolDecision) and decision.executable
        (call,) = decision.calls
        assert call.call_id_generated and call.call_id.startswith("gen-") and call.call_id.endswith("call_0")
        assert decisions.decide(turn(f"{index}.txt")).calls[0].call_id == call.call_id
        ids.append(call.call_id)
        ledger.record(decision, run_id="r")
    assert ids[0] != ids[1]
    assert [entry.call_id for entry in ledger.entries("r")] == ids
    with pytest.raises(decisions.PolicyError) as info:
        decisions.decide(turn("1.txt"), run=run)
    assert info.value.code == "CALL_ALREADY_DECIDED"


def test_generated_ids_keep_the_provider_identity_when_there_is_one() -> None:
    """A response id already tells turns apart: its generated ids are left as the mapper made them."""
    body = json.loads(_gemini_body("a.txt"))
    body["responseId"] = "resp-9"
    (call,) = decisions.decide(decisions.normalize(json.dumps(body), provider="gemini")).calls
    assert call.call_id == "resp-9:call_0"


def test_quoting_scan_is_linear() -> None:
    """Markdown-heavy text around many calls: 10x the input costs about 10x."""
    unit = "> quoted `span` text\n\n```\ncode\n```\n- item `a` b\n" + CALL + "\n\n"

    def run(times: int) -> float:
        text = unit * times
        limits = decisions.Limits(max_calls_per_response=10 * times)
        start = time.perf_counter()
        assert len(parse_tool_calls(text, limits=limits).calls) == times
        return time.perf_counter() - start

    ratio = _ratio(run, 100, 1000)
    assert ratio < 40, ratio  # quadratic would be about 100
    # backticks around every call in one long paragraph (every other call quoted)
    para = "x ` " + CALL + " "

    def run_paragraph(times: int) -> float:
        text = para * times
        limits = decisions.Limits(max_calls_per_response=10 * times)
        start = time.perf_counter()
        parse_tool_calls(text, limits=limits)
        return time.perf_counter() - start

    ratio = _ratio(run_paragraph, 100, 1000)
    assert ratio < 40, ratio


#: Container shapes whose scan once cost more than the text: each gives the
#: text for a size ``n``, and how many calls of it stand (are not quoted).
NESTING: dict[str, tuple[Callable[[int], str], int]] = {
    # each line's containers matched the spaces before them again per
    # container: n lines nested n deep, the cube of n (400 lines: 1.2 s)
    "indented items": (lambda n: "".join("  " * i + "- x\n" for i in range(n)) + CALL, 1),
    # a blank line under n open items walked all of them (8,000 items and
    # 80,000 blank lines, 96 KB: 91 s)
    "blank lines under open items": (lambda n: "- " * n + "x\n" + "\n" * (10 * n) + CALL, 1),
    # so did a line blank after its quote marker, under a quote holding n items
    "quote lines under open items": (lambda n: "> " + "- " * n + "x\n" + ">\n" * (10 * n) + "> " + CALL, 0),
    # each list marker of one line read the rest of the line for a thematic
    # break (20,000 markers, 40 KB: 12 s)
    "markers on one line": (lambda n: "- " * (20 * n) + "x " + CALL, 1),
    "near-breaks on one line": (lambda n: "* " + "- " * (20 * n) + "x " + CALL, 1),
}


@pytest.mark.parametrize("shape", list(NESTING))
def test_nested_containers_scan_in_linear_time(shape: str) -> None:
    """Lists and quotes nested thousands deep: the text's size grows 16
    times, the scan's time about as much (it grew 64 times and more)."""
    build, standing = NESTING[shape]
    small, large = build(100), build(400)
    grow = 16 if shape == "indented items" else 4  # the indented items' text grows with the square of n
    for text in (small, large):
        assert len(parse_tool_calls(text).calls) == standing
        assert QuotedRanges(text).quoted(text.index("<tool_call>")) is (standing == 0)

    def run(n: int) -> float:
        text = small if n == 100 else large
        start = time.perf_counter()
        parse_tool_calls(text)
        return time.perf_counter() - start

    ratio = _ratio(run, 100, 400)
    assert ratio < 2.5 * grow, (ratio, grow)


def _ratio(run: Callable[[int], float], small: int, large: int) -> float:
    """Best-of-five time of ``run(large)`` over ``run(small)``."""
    run(small)
    return min(run(large) for _ in range(5)) / min(run(small) for _ in range(5))


# ================================================================ 2. secrets

_RANDOM = __import__("random").Random(20260101)
_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_BASE64 = _ALNUM + "+/"


def _rand(alphabet: str, length: int) -> str:
    return "".join(_RANDOM.choice(alphabet) for _ in range(length))


def _pem(kind: str) -> tuple[str, list[str]]:
    body = [_rand(_BASE64, 64) for _ in range(12)] + [_rand(_BASE64, 20) + "=="]
    block = f"-----BEGIN {kind}-----\n" + "\n".join(body) + f"\n-----END {kind}-----"
    return block, body


_PEM, _PEM_BODY = _pem("RSA PRIVATE KEY")
_OPENSSH, _OPENSSH_BODY = _pem("OPENSSH PRIVATE KEY")
_AWS_SECRET = _rand(_BASE64, 40)


def _around(before: str, secret: str, after: str) -> tuple[str, list[str]]:
    return before + secret + after, [secret]


#: (label, the text as written, the secret parts that must not survive): realistic lengths and formats.
SECRETS: list[tuple[str, str, list[str]]] = [
    (label, text, parts or [text])
    for label, text, parts in [
        ("OpenAI project key, 164", "sk-proj-" + _rand(_B64URL, 74) + "T3BlbkFJ" + _rand(_B64URL, 74), []),
        ("OpenAI project key, 170", "sk-proj-" + _rand(_B64URL, 162), []),
        ("OpenAI service account key", "sk-svcacct-" + _rand(_B64URL, 156), []),
        ("OpenAI legacy key", "sk-" + _rand(_ALNUM, 20) + "T3BlbkFJ" + _rand(_ALNUM, 20), []),
        ("Anthropic key", "sk-ant-api03-" + _rand(_B64URL, 93) + "AA", []),
        ("Anthropic admin key", "sk-ant-admin01-" + _rand(_B64URL, 93) + "AA", []),
        ("Google API key, 39", "AIza" + _rand(_B64URL, 35), []),
        ("Google OAuth token", "ya29." + _rand(_B64URL, 150), []),
        ("AWS access key id", "AKIA" + _rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16), []),
        ("AWS temporary key id", "ASIA" + _rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16), []),
        ("AWS secret in an env line", "aws_secret_access_key=" + _AWS_SECRET, [_AWS_SECRET]),
        ("AWS secret as a JSON member", '"SecretAccessKey": "' + _AWS_SECRET + '"', [_AWS_SECRET]),
        ("GitHub classic token", "ghp_" + _rand(_ALNUM, 36), []),
        ("GitHub OAuth token", "gho_" + _rand(_ALNUM, 36), []),
        ("GitHub fine-grained token", "github_pat_" + _rand(_ALNUM, 22) + "_" + _rand(_ALNUM, 59), []),
        ("GitLab token", "glpat-" + _rand(_B64URL, 20), []),
        ("Slack bot token", f"xoxb-{_rand('0123456789', 12)}-{_rand('0123456789', 13)}-{_rand(_ALNUM, 24)}", []),
        (
            "Slack user token",
            f"xoxp-{_rand('0123456789', 12)}-{_rand('0123456789', 12)}-{_rand('0123456789', 13)}-{_rand('0123456789abcdef', 32)}",
            [],
        ),
        (
            "Slack webhook",
            *_around(
                "https://hooks.slack.com/services/",
                f"T{_rand(_ALNUM, 10)}/B{_rand(_ALNUM, 10)}/{_rand(_ALNUM, 24)}",
                "",
            ),
        ),
        ("Hugging Face token", "hf_" + _rand(_ALNUM, 34), []),
        ("Stripe live key", "sk_live_" + _rand(_ALNUM, 99), []),
        ("JWT", "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9." + _rand(_B64URL, 180) + "." + _rand(_B64URL, 342), []),
        ("PEM private key", _PEM, _PEM_BODY),
        ("PEM private key, JSON-escaped", json.dumps(_PEM)[1:-1], _PEM_BODY),
        ("OpenSSH private key", _OPENSSH, _OPENSSH_BODY),
        ("bearer header", *_around("Authorization: Bearer ", _rand(_B64URL, 48), "")),
        ("basic auth header", *_around("authorization: Basic ", _rand(_BASE64, 40), "")),
        ("x-api-key header", *_around("x-api-key: ", _rand(_B64URL, 40), "")),
        ("URL credentials", *_around("postgres://admin:", _rand(_ALNUM, 24), "@db.internal:5432/app")),
        ("password member", *_around('"password": "', "correct-horse-" + _rand(_ALNUM, 10), '"')),
        ("password member, escaped inside a string", *_around('{\\"db_password\\": \\"', _rand(_ALNUM, 16), '\\"}')),
        ("secret member", *_around('"client_secret": "', _rand(_B64URL, 40), '"')),
        ("token member", *_around("'refresh_token': '", _rand(_B64URL, 64), "'")),
        ("password in YAML", *_around("PASSWORD: ", _rand(_ALNUM, 20), "")),
        ("api key in env", *_around("OPENAI_API_KEY=", _rand(_ALNUM, 12), "")),
    ]
]


def _fragments(secret: str) -> Iterator[str]:
    for start in range(len(secret) - 7):
        yield secret[start : start + 8]


def _assert_gone(parts: list[str], outputs: dict[str, str]) -> None:
    for where, output in outputs.items():
        for part in parts:
            for fragment in _fragments(part):
                assert fragment not in output, f"{fragment!r} of the secret survives in {where}: {output[:400]!r}"


def _shown(error: OutputError) -> dict[str, str]:
    """Everything an error shows: str, repr, args, to_dict, the pickled form,
    a trace record and the trace redactor's dict."""
    clone = pickle.loads(pickle.dumps(error))
    return {
        "str": str(error),
        "repr": repr(error),
        "args": repr(error.args),
        "to_dict": json.dumps(error.to_dict()),
        "pickle": pickle.dumps(error).decode("latin-1"),
        "unpickled": str(clone) + json.dumps(clone.to_dict()),
        "parse_record": json.dumps(parse_record(error=error, response=_stop("x"))),
        "error_dict": json.dumps(Redactor().error_dict(error)),
    }


def _ids(cases: list[tuple[str, str, list[str]]]) -> list[str]:
    return [case[0] for case in cases]


@pytest.mark.parametrize(("label", "secret", "parts"), SECRETS, ids=_ids(SECRETS))
def test_secret_masked_in_text(label: str, secret: str, parts: list[str]) -> None:
    text = f"config:\n{secret}\nend"
    masked = decisions.recover.trace.Redactor().redact_text(text)
    assert "[REDACTED]" in masked
    _assert_gone(parts, {"redacted text": masked})


@pytest.mark.parametrize(("label", "secret", "parts"), SECRETS, ids=_ids(SECRETS))
def test_secret_in_a_repair_excerpt(label: str, secret: str, parts: list[str]) -> None:
    """The excerpt is cut around the error's offset: before, at and inside
    the secret; masking comes first, so no fragment is left at the cut."""
    escaped = json.dumps(secret)[1:-1]
    errors: list[tuple[ParseError, str]] = []
    for text in (
        '{"note": "' + escaped + '\\d"}',  # the error right after the secret
        '{"path": "C:\\dir", "note": "' + escaped + '"}',  # the error before it
        '{"note": "' + escaped + '", "path": "C:\\dir"}',  # the error after it
    ):
        with pytest.raises(ParseError) as info:
            decisions.loads(text)
        assert info.value.code == "INVALID_ESCAPE"
        errors.append((info.value, text))
    text = '{"note": "' + escaped + '"} x'
    for inside in (10, 10 + len(escaped) // 2, 10 + len(escaped) - 1):  # an offset inside the secret
        errors.append((ParseError("TRAILING_CONTENT", doc=text, pos=inside), text))
    for error, text in errors:
        prompt = repair_prompt(error, text=text)
        assert "^" in prompt
        # the secret as it stands in the text (escaped) must not survive, in either spelling
        _assert_gone(parts + [json.dumps(part)[1:-1] for part in parts], {"repair prompt": prompt, **_shown(error)})


def test_repair_excerpt_caret_stays_on_the_error() -> None:
    key = "sk-proj-" + _rand(_B64URL, 162)
    text = '{"key": "' + key + '", "path": "C:\\dir"}'
    with pytest.raises(ParseError) as info:
        decisions.loads(text)
    prompt = repair_prompt(info.value, text=text)
    near = prompt.splitlines()
    line = next(i for i, row in enumerate(near) if row == "Near:") + 1
    assert near[line + 1].index("^") == near[line].index("\\d")


@pytest.mark.parametrize(("label", "secret", "parts"), SECRETS, ids=_ids(SECRETS))
def test_secret_as_an_object_key_in_error_paths(label: str, secret: str, parts: list[str]) -> None:
    """A key used as a member name reaches ``error.path`` and the issues."""
    text = '<tool_call>{"name": "read_file", "arguments": {}, ' + json.dumps(secret) + ": 1}</tool_call>"
    with pytest.raises(SchemaError) as info:
        parse_tool_calls(text)
    assert info.value.code == "SCHEMA_MISMATCH" and info.value.path is not None
    shown = _shown(info.value)
    shown["fingerprint"] = repr(decisions.recover.repair.fingerprint(info.value))
    shown["repair prompt"] = repair_prompt(info.value)
    _assert_gone(parts, shown)


@pytest.mark.parametrize(
    ("label", "secret", "parts"), SECRETS[:6] + SECRETS[12:16], ids=_ids(SECRETS[:6] + SECRETS[12:16])
)
def test_secret_in_messages_of_later_layers(label: str, secret: str, parts: list[str], tmp_path: Path) -> None:
    """A secret the model put in a tool name or a path argument reaches the
    domain and policy messages, hints and paths."""
    from pydantic import BaseModel

    class ReadFile(BaseModel):
        path: str

    tools = decisions.ToolRegistry([decisions.Tool(name="read_file", parameters=ReadFile, side_effects=False)])
    policy = decisions.Policy(workspace=str(tmp_path), tools={"read_file": decisions.ToolRule(paths={"path": "read"})})
    for name, arguments, error_class, code in (
        (secret, {"path": "a.txt"}, decisions.DomainError, "UNKNOWN_TOOL"),
        ("read_file", {"path": "../" + secret}, PolicyError, "PATH_OUTSIDE_WORKSPACE"),
        ("read_file", {"path": "/" + secret}, PolicyError, "PATH_OUTSIDE_WORKSPACE"),
    ):
        call = ToolCallItem(item_id="c", call_id="call_1", name=name, arguments=json.dumps(arguments))
        response = NormalizedResponse(
            provider="openai-chat", response_id="r", model="m", finish_reason="tool_calls", items=(call,)
        )
        with pytest.raises(error_class) as info:
            decisions.decide(response, tools=tools, policy=policy)
        assert info.value.code == code
        _assert_gone(parts, {**_shown(info.value), "repair prompt": repair_prompt(info.value)})


def test_every_error_field_is_masked() -> None:
    key = "sk-ant-api03-" + _rand(_B64URL, 93) + "AA"
    for cls, code in (
        (ParseError, "UNEXPECTED_CHARACTER"),
        (SchemaError, "SCHEMA_MISMATCH"),
        (StreamError, "MALFORMED_EVENT"),
        (PolicyError, "SCOPE_DENIED"),
    ):
        fields: dict[str, Any] = {"path": f"$.{key}", "hint": f"use {key}"}
        if cls is not ParseError:
            fields["issues"] = (
                {
                    "path": f"$['{key}']",
                    "code": "x",
                    "expected": [key, {"nested": (key,)}],
                    "got": {"password": "hunter2", key: 1},
                },
            )
        error = cls(code, f"bad {key}", **fields)
        shown = _shown(error)
        assert "[REDACTED]" in shown["to_dict"] and "hunter2" not in shown["to_dict"]
        _assert_gone([key], shown)
        built = new_error(code, f"bad {key}", **fields)
        _assert_gone([key], _shown(built))


def test_redaction_keeps_ordinary_text() -> None:
    text = (
        '{"max_tokens": 1024, "tokens": 5, "path": "src/risk-assessment-document-2024.md", '
        '"author": "Ana", "key": "value", "task-0123456789abcdefgh": 1}'
    )
    assert decisions.recover.trace.Redactor().redact_text(text) == text


def _redact_time(text: str) -> float:
    redact = decisions.recover.trace.Redactor().redact_text
    best = float("inf")
    for _ in range(5):  # the process's own CPU time: other work on the machine does not count
        start = time.process_time()
        redact(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize(
    "unit",
    [
        # a realistic argument: code with credentials in it
        'api_key = "'
        + "sk-proj-"
        + "a1B2" * 40
        + '"\npassword: hunter2hunter2\nprint("tokens", n)\n# AKIAABCDEFGHIJKLMNOP\n',
        "password:" + " " * 8 + '"' + "\\\\" * 50,  # an escape run inside a value
        "-----BEGIN PRIVATE KEY-----",  # openings without an end
        "://user:",  # URL credentials without an @
        "sk-",  # prefixes without a key
        "eyJ" + "a" * 9 + ".",
        "token=" * 3,
        "Bearer ",
        "a",  # no candidate at all
        "A" * 3 + "KIA",
    ],
)
def test_redaction_is_linear(unit: str) -> None:
    """250 KB and 2.5 MB of the same shape: 10x the input, about 10x the time
    (a backtracking pattern would be 100x). Both sizes are past the CPU
    caches, which would otherwise make the small one unfairly fast."""
    small = unit * (250_000 // len(unit))
    large = unit * (2_500_000 // len(unit))
    _redact_time(small)
    ratio = _redact_time(large) / _redact_time(small)
    assert ratio < 25, ratio
