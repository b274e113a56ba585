"""The JSON-text fallback: values and tool calls a model writes as plain text.

Two readers, both strict and bounded:

- :func:`parse_json_text` takes a reply that must be exactly one JSON value:
  no prose, no Markdown fence (``MARKDOWN_FENCE``), at most ``max_chars``
  characters, parsed by the strict :func:`decisions.loads`. With
  ``allow_fence=True`` -- an explicit, off-by-default option -- exactly one
  fenced block with nothing outside it is accepted, and the result says so in
  ``repaired``.
- :func:`parse_tool_calls` reads the ``<tool_call>{"name": ..., "arguments":
  {...}}</tool_call>`` blocks that Qwen- and Hermes-style models write, several
  per reply, with a scanner that knows JSON strings: a ``</tool_call>`` inside
  a string does not end the block, an unclosed block or a block with more
  than one value is an error with its offset, and text outside the blocks is
  kept as text, never searched for actions. A block the Markdown of the reply
  quotes -- inside a code span, a fenced or indented code block, a block quote
  or a verbatim HTML block (CommonMark's rules, see ``_markdown``) -- is text
  too: a model explaining the format or echoing a fetched page is not calling.
  A reply that is exactly one JSON value holds no calls (a tag in its
  strings is data), and a look-alike tag that stands in the text
  (``<TOOL_CALL>``, ``<tool_call >``, an invisible character, fullwidth
  brackets) is an error, never the text of an answer that drops the call.
  The ``<think> ... </think>`` reasoning a reply opens with is text: a call
  drafted there is not made (never closed, it runs to the end of the reply).

:func:`tool_calls_response` turns a text-only :class:`~decisions.types.NormalizedResponse`
into one with tool-call items, so :func:`decisions.decide` checks those calls
exactly like native ones.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from typing import Any, Final, overload

from .. import _backend
from .._json_errors import fix_text, parse_error
from .._payload import canonical_json
from ..errors import ParseError, SchemaError, StreamError, snapshot_error
from ..limits import DEFAULT_LIMITS, Limits, count
from ..types import FixedResponse, NormalizedResponse, ResponseSnapshot, TextItem, ToolCallItem
from ._markdown import QuotedRanges

__all__ = [
    "TOOL_CALL_OPEN",
    "TOOL_CALL_CLOSE",
    "TextValue",
    "TextCall",
    "TextCalls",
    "parse_json_text",
    "parse_tool_calls",
    "tool_calls_response",
]

TOOL_CALL_OPEN: Final = "<tool_call>"
TOOL_CALL_CLOSE: Final = "</tool_call>"

_FENCE_LINE: Final = re.compile(r"(?m)^[ \t]*```")
_ONE_FENCE: Final = re.compile(r"\A\s*```[A-Za-z0-9_+-]*[ \t]*\r?\n(?P<body>.*?)\r?\n[ \t]*```\s*\Z", re.DOTALL)
_JSON_STRUCTURE: Final = re.compile(r'["{}\[\]]')
#: The rest of a JSON string after its opening quote, through the closing quote.
_STRING_REST: Final = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_WS: Final = " \t\r\n"
_ENVELOPE_KEYS: Final = frozenset({"name", "arguments"})
#: A tag-like run a model may have meant as a tag: an opening bracket (ASCII,
#: fullwidth or small form), up to 40 characters without a bracket or a line
#: break, a closing bracket.
_TAG_LIKE: Final = r"[<\uFF1C\uFE64][^<>\uFF1C\uFF1E\uFE64\uFE65\r\n]{1,40}[>\uFF1E\uFE65]"
_TAG: Final = re.compile(rf"</?tool_call>|{_TAG_LIKE}")
_EXACT_TAGS: Final = frozenset({TOOL_CALL_OPEN, TOOL_CALL_CLOSE})
#: The reasoning a reply opens with (Qwen3, DeepSeek-R1 and the like served
#: without a reasoning parser): ``<think> ... </think>`` before the answer.
_THINK_OPEN: Final = re.compile(r"\A[ \t\r\n\ufeff]*<think>")
_THINK_CLOSE: Final = "</think>"


def _reasoning_end(text: str) -> int:
    """Where the ``<think>`` reasoning ``text`` opens with ends: just past
    its ``</think>``, the end of ``text`` when it is never closed, 0 when
    ``text`` does not open with one."""
    opening = _THINK_OPEN.match(text)
    if opening is None:
        return 0
    closing = text.find(_THINK_CLOSE, opening.end())
    return len(text) if closing < 0 else closing + len(_THINK_CLOSE)


def _look_alike(tag: str) -> bool:
    """Whether ``tag`` is not a ``<tool_call>`` tag but reads as one: the
    same after NFKC (fullwidth and small forms), without invisible
    (format) characters and spaces, in lower case."""
    if len(tag) < len(TOOL_CALL_OPEN) or tag in _EXACT_TAGS:
        return False
    if tag.isascii():  # the common case, read without normalizing
        return "".join(tag.split()).lower() in _EXACT_TAGS
    folded = "".join(
        char for char in unicodedata.normalize("NFKC", tag) if not char.isspace() and unicodedata.category(char) != "Cf"
    )
    return folded.casefold() in _EXACT_TAGS


@dataclass(frozen=True, slots=True)
class TextValue:
    """A JSON value read from text; ``repaired`` names the deterministic
    fixes applied (``("markdown_fence",)`` when a fence was accepted)."""

    value: Any
    repaired: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TextCall:
    """One ``<tool_call>`` block: the tool ``name``, its ``arguments`` object,
    the arguments as canonical JSON text, and the block's character span."""

    name: str
    arguments: dict[str, Any]
    arguments_json: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class TextCalls:
    """The calls found in a reply, in order, and the text outside them."""

    calls: tuple[TextCall, ...]
    text: str


def _shifted(error: ParseError, doc: str, base: int) -> ParseError:
    """``error`` with its offset moved from a slice into the whole text."""
    return ParseError(error.code, error.message, doc=doc, pos=base + (error.pos or 0), hint=error.hint, path=error.path)


def _loads(doc: str, start: int, end: int, limits: Limits) -> Any:
    try:
        return _backend.impl.loads(doc[start:end], limits=limits)
    except ParseError as error:
        raise _shifted(error, doc, start) from None


def _check_size(text: str, max_chars: int | None, limits: Limits) -> None:
    if max_chars is not None and len(text) > count("max_chars", max_chars):
        raise ParseError(
            "DOCUMENT_TOO_LARGE",
            f"the reply is longer than {max_chars} characters",
            doc="",
            pos=max_chars,
            hint="answer with a shorter value",
        )
    if len(text) > limits.max_document_bytes or len(text.encode("utf-8", "surrogatepass")) > limits.max_document_bytes:
        raise parse_error("DOCUMENT_TOO_LARGE", "", 0, limits)  # the parser's own error


def parse_json_text(
    text: str,
    *,
    limits: Limits | None = None,
    max_chars: int | None = None,
    allow_fence: bool = False,
) -> TextValue:
    """The single JSON value ``text`` holds.

    Raises :class:`~decisions.ParseError`: ``DOCUMENT_TOO_LARGE`` past
    ``max_chars`` characters (or ``limits.max_document_bytes``),
    ``MARKDOWN_FENCE`` for a fenced block (unless ``allow_fence`` and it is the
    only thing in the reply), and every strict-parser error, with the offset
    into ``text``.
    """
    limits = limits or DEFAULT_LIMITS
    _check_size(text, max_chars, limits)
    fence = _FENCE_LINE.search(text)
    if fence is None:
        return TextValue(_loads(text, 0, len(text), limits))
    block = _ONE_FENCE.match(text) if allow_fence else None
    if block is None or _FENCE_LINE.search(block.group("body")) is not None:
        raise ParseError(
            "MARKDOWN_FENCE",
            doc=text,
            pos=fence.start() + fence.group().index("`"),
            hint=fix_text("MARKDOWN_FENCE"),
        )
    return TextValue(_loads(text, block.start("body"), block.end("body"), limits), ("markdown_fence",))


def _value_end(text: str, start: int) -> int:
    """The index just past the JSON object or array opening at ``start``,
    following strings and escapes; -1 if the input ends first. Strings are
    skipped by one regular-expression match each (unrolled loop, linear)."""
    depth = 0
    pos = start
    while True:
        match = _JSON_STRUCTURE.search(text, pos)
        if match is None:
            return -1
        char = match.group()
        if char == '"':
            body = _STRING_REST.match(text, match.end())
            if body is None:
                return -1
            pos = body.end()
            continue
        pos = match.end()
        if char in "{[":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return pos


def _skip_ws(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WS:
        index += 1
    return index


def _envelope(value: dict[str, Any], doc: str, start: int) -> tuple[str, dict[str, Any]]:
    """The name and arguments of a block's object (the caller saw it open with ``{``)."""
    issues: list[dict[str, str]] = []
    name = value.get("name")
    if not isinstance(name, str) or not name:
        issues.append(
            {
                "path": "$.name",
                "code": "required" if "name" not in value else "type",
                "expected": "the tool name as a non-empty string",
            }
        )
    if "arguments" not in value:
        issues.append({"path": "$.arguments", "code": "required", "expected": "an object"})
    for key in sorted(set(value) - _ENVELOPE_KEYS):
        issues.append({"path": f"$.{key}", "code": "unknown_field", "expected": "only name and arguments"})
    if issues:
        raise SchemaError(
            "SCHEMA_MISMATCH",
            'a <tool_call> block must be {"name": ..., "arguments": {...}}',
            path=issues[0]["path"],
            issues=tuple(issues),
            offset=start,
            hint='write {"name": "...", "arguments": {...}}',
        )
    arguments = value["arguments"]
    if isinstance(arguments, str):
        raise ParseError(
            "DOUBLE_ENCODED_JSON",
            doc=doc,
            pos=start,
            path="$.arguments",
            hint=fix_text("DOUBLE_ENCODED_JSON"),
        )
    if not isinstance(arguments, dict):
        raise ParseError(
            "ARGUMENTS_NOT_OBJECT", doc=doc, pos=start, path="$.arguments", hint=fix_text("ARGUMENTS_NOT_OBJECT")
        )
    return str(name), arguments


def _block_value(text: str, start: int, limits: Limits) -> tuple[Any, int]:
    """The JSON value of the block whose object opens at ``start``, and the
    index of its ``</tool_call>``.

    Fast path: the text up to the first ``</tool_call>`` parses as one value.
    Otherwise that tag sits inside a string (or the block is malformed): the
    scanner finds where the object really ends, and the errors name the place.
    """
    closing = text.find(TOOL_CALL_CLOSE, start)
    if closing >= 0:
        try:
            return _backend.impl.loads(text[start:closing], limits=limits), closing
        except ParseError:
            pass
    end = _value_end(text, start)
    if end < 0:
        if closing >= 0:
            _loads(text, start, closing, limits)  # raises the precise error inside the block
        raise ParseError(
            "UNEXPECTED_END",
            "the <tool_call> block ends before its JSON object closes",
            doc=text,
            pos=len(text),
            hint="finish the JSON object and close the block with </tool_call>",
        )
    after = _skip_ws(text, end)
    if after >= len(text):
        raise ParseError(
            "UNEXPECTED_END",
            "the <tool_call> block is not closed",
            doc=text,
            pos=after,
            hint="close the block with </tool_call>",
        )
    if not text.startswith(TOOL_CALL_CLOSE, after):
        raise ParseError(
            "TRAILING_CONTENT",
            "a <tool_call> block holds exactly one JSON object",
            doc=text,
            pos=after,
            hint="put each call in its own <tool_call> ... </tool_call> block",
        )
    return _loads(text, start, end, limits), after


def parse_tool_calls(text: str, *, limits: Limits | None = None) -> TextCalls:
    """The ``<tool_call>`` blocks in ``text`` and the text outside them.

    Each block holds exactly one JSON object ``{"name": str, "arguments":
    object}`` (whitespace around it allowed); a ``text`` that is one JSON
    value has none, and neither has the ``<think>`` reasoning it opens with
    (Markdown is read from the reasoning's end). Raises ``ParseError`` (offsets
    into ``text``) for an unclosed block (``UNEXPECTED_END``), a second value
    or other content in a block (``TRAILING_CONTENT``), a fence inside a
    block (``MARKDOWN_FENCE``), a stray ``</tool_call>`` or a look-alike tag
    (``UNEXPECTED_CHARACTER``), or any strict-parser error; ``SchemaError``
    for a block that is not a name/arguments envelope;
    ``StreamError(TOO_MANY_CALLS)`` past ``limits.max_calls_per_response``.
    """
    limits = limits or DEFAULT_LIMITS
    if len(text) > limits.max_response_bytes or len(text.encode("utf-8", "surrogatepass")) > limits.max_response_bytes:
        raise StreamError("RESPONSE_TOO_LARGE")
    reasoning = _reasoning_end(text)  # drafts in the reasoning are not calls
    answer = text[reasoning:]
    if answer.lstrip(_WS)[:1] in ("{", "[", '"'):
        try:
            _backend.impl.loads(answer, limits=limits)
        except ParseError:
            pass  # not one JSON value: scanned for blocks
        else:
            return TextCalls((), text)  # one JSON value: a tag in its strings is data
    calls: list[TextCall] = []
    outside: list[str] = []
    quoting = QuotedRanges(text, reasoning)
    pos = 0  # start of the text not yet kept
    search = reasoning
    while True:
        tag = _TAG.search(text, search)
        if tag is None:
            break
        opening = tag.start()
        search = tag.end()
        if tag.group() not in _EXACT_TAGS and not _look_alike(tag.group()):
            continue  # some other tag, or a bracket: text
        if quoting.quoted(opening):
            continue  # quoted in a code span, code block, block quote: text
        if tag.group() not in _EXACT_TAGS:
            raise ParseError(
                "UNEXPECTED_CHARACTER",
                f"{tag.group()!a} reads as a <tool_call> tag but is not one",
                doc=text,
                pos=opening,
                hint="write the tags exactly <tool_call> and </tool_call>: ASCII, lower case, no spaces",
            )
        if tag.group() == TOOL_CALL_CLOSE:
            raise ParseError(
                "UNEXPECTED_CHARACTER",
                "a </tool_call> without its <tool_call>",
                doc=text,
                pos=opening,
                hint="wrap each call in <tool_call> ... </tool_call>",
            )
        outside.append(text[pos:opening])
        if len(calls) >= limits.max_calls_per_response:
            raise StreamError("TOO_MANY_CALLS", offset=opening)
        start = _skip_ws(text, opening + len(TOOL_CALL_OPEN))
        if start >= len(text):
            raise ParseError(
                "UNEXPECTED_END",
                "the <tool_call> block is not closed",
                doc=text,
                pos=len(text),
                hint="finish the JSON object and close the block with </tool_call>",
            )
        if text.startswith("```", start):
            raise ParseError(
                "MARKDOWN_FENCE",
                doc=text,
                pos=start,
                hint="put the JSON object directly inside <tool_call>, without ``` fences",
            )
        if text[start] != "{":
            raise ParseError(
                "UNEXPECTED_CHARACTER",
                "a <tool_call> block holds one JSON object",
                doc=text,
                pos=start,
                hint='write {"name": "...", "arguments": {...}}',
            )
        value, after = _block_value(text, start, limits)
        name, arguments = _envelope(value, text, start)
        block_end = after + len(TOOL_CALL_CLOSE)
        calls.append(TextCall(name, arguments, canonical_json(arguments), opening, block_end))
        pos = search = block_end
        quoting.resume(block_end)
    outside.append(text[pos:])
    return TextCalls(tuple(calls), "".join(outside))


def _has_tag(text: str) -> bool:
    """Whether ``text`` holds a ``<tool_call>`` tag or a look-alike of one."""
    return TOOL_CALL_OPEN in text or any(_look_alike(tag.group()) for tag in re.finditer(_TAG_LIKE, text))


@overload
def tool_calls_response(response: NormalizedResponse, *, limits: Limits | None = None) -> NormalizedResponse: ...
@overload
def tool_calls_response(response: FixedResponse, *, limits: Limits | None = None) -> FixedResponse: ...
def tool_calls_response(
    response: NormalizedResponse | FixedResponse, *, limits: Limits | None = None
) -> NormalizedResponse | FixedResponse:
    """``response`` with the ``<tool_call>`` blocks of its text turned into
    tool-call items (call ids generated and flagged as such:
    ``{response_id}:text_call_{k}``, ``text_call_{k}`` without a response id,
    so the calls of two responses of one run do not share ids).

    Only a response that finished with ``stop`` is read: a cut-off response
    (``length``, content filter, ...) is returned unchanged, so the
    completeness gate reports it as incomplete instead of a parse error on
    the half-written block. Text outside the blocks stays a text item, and so
    does a block the text quotes (in a code span, a code block or a block
    quote): only a block that stands on its own is a call; a response whose
    blocks are all quoted is returned unchanged.

    A :class:`~decisions.types.FixedResponse` comes back as one, with its
    fixes, so ``decide`` still treats the calls as repaired.

    Raises the errors of :func:`parse_tool_calls`,
    ``StreamError(SNAPSHOT_NOT_DECIDABLE)`` for a provisional snapshot, and
    ``SchemaError(AMBIGUOUS_DECISION)`` when the response also has native
    tool calls: which of the two sets to run would be a guess.
    """
    if isinstance(response, FixedResponse):
        return FixedResponse(tool_calls_response(response.response, limits=limits), response.applied)
    if isinstance(response, ResponseSnapshot):
        raise snapshot_error(response.state)
    if response.finish_reason != "stop" or not _has_tag(response.text):
        return response
    found = parse_tool_calls(response.text, limits=limits)
    if not found.calls:
        return response
    if response.tool_calls:
        raise SchemaError(
            "AMBIGUOUS_DECISION",
            "the response has native tool calls and <tool_call> blocks in its text",
            path="$",
            offset=found.calls[0].start,
            hint="make tool calls either natively or as <tool_call> blocks, not both",
        )
    items: list[Any] = []
    outside = found.text.strip()
    if outside:
        items.append(TextItem(item_id="text_0", text=outside))
    prefix = f"{response.response_id}:" if response.response_id else ""
    for index, call in enumerate(found.calls):
        items.append(
            ToolCallItem(
                item_id=f"text_call_{index}",
                call_id=f"{prefix}text_call_{index}",
                name=call.name,
                arguments=call.arguments_json,
                call_id_generated=True,
            )
        )
    kept = tuple(item for item in response.items if not isinstance(item, TextItem))
    return replace(response, items=kept + tuple(items), finish_reason="tool_calls")
