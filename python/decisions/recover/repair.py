"""Bounded repair: what to tell the model after a failure, and when to stop.

:func:`repair_prompt` renders an :class:`~decisions.errors.OutputError` as
a message fit to send back to the model: the layer, the stable code, the
JSON paths, and for a parse error the line, column, a short excerpt around
the offset and the concrete fix (for ``\\d``: write ``\\\\d``). It carries no
stack trace, no internal state and no secrets (credentials are masked in the
whole text before the excerpt is cut from it), and is cut to a length limit.

:class:`RepairBudget` bounds the loop for one run: a maximum number of
repair attempts, an early stop when the same fingerprint (layer, code, path)
comes back after a repair prompt (``REPEATED_ERROR``), and a refusal to send
truncated output for repair (the fix is a larger output limit or a shorter
task, never a guess at the missing end).

:func:`apply_fixes` applies deterministic fixes from a small whitelist
(invalid ``\\d``-style escapes, one Markdown fence). They are off unless
asked for, and every applied fix is named in the result so that a decision
built from repaired text can say so -- and a side-effecting tool can refuse it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Final, Iterable, Literal

from .._json_errors import fix_text
from .._payload import canonical_json
from ..errors import ERROR_CODES, OutputError, ParseError, PolicyError, snapshot_error
from ..limits import Limits, count
from ..request.textcalls import _has_tag, parse_json_text, parse_tool_calls
from ..types import FixedResponse, Item, NormalizedResponse, ResponseSnapshot, TextItem, ToolCallItem
from .trace import Redactor

__all__ = [
    "Fix",
    "FIXES",
    "TRUNCATION_CODES",
    "Fingerprint",
    "fingerprint",
    "is_repairable",
    "repair_prompt",
    "RepairBudget",
    "Fixed",
    "apply_fixes",
    "fix_invalid_escapes",
    "fix_response",
]

Fix = Literal["invalid_escapes", "markdown_fence"]
#: The whitelist of deterministic fixes (all off unless named).
FIXES: Final[tuple[Fix, ...]] = ("invalid_escapes", "markdown_fence")

#: Codes that mean the output was cut off: never sent for repair.
TRUNCATION_CODES: Final = frozenset(
    {"INCOMPLETE_RESPONSE", "INCOMPLETE_TOOL_CALL", "ITEM_NOT_ENDED", "NO_TERMINAL_EVENT"}
)
_TRUNCATION_ADVICE: Final = (
    "the output was cut off before it was complete: raise the output token limit or shorten the task; "
    "a cut-off value is never repaired by guessing its end"
)
#: Layers whose errors the model can fix by writing a different answer.
_REPAIRABLE_LAYERS: Final = frozenset({"parse", "schema", "domain", "policy"})
#: Codes of the budget itself: they end the loop.
_BUDGET_CODES: Final = frozenset({"REPAIR_BUDGET_EXHAUSTED", "REPEATED_ERROR"})

DEFAULT_MAX_CHARS: Final = 2000
#: The shortest repair message asked for: room for the error line and the closing instruction.
MIN_CHARS: Final = 200
_EXCERPT_RADIUS: Final = 32
_MAX_ISSUES: Final = 12

# ---------------------------------------------------------------- fingerprints and the budget


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What identifies "the same error" across attempts."""

    layer: str
    code: str
    path: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "code": self.code, "path": self.path}


def fingerprint(error: OutputError) -> Fingerprint:
    """(layer, code, path) of ``error``; for several schema issues, their
    sorted paths stand in for the path."""
    path = error.path
    if path is None and error.issues:
        path = ",".join(sorted({str(issue.get("path", "")) for issue in error.issues}))
    return Fingerprint(error.layer, error.code, path)


def is_repairable(error: OutputError) -> bool:
    """Whether asking the model to write a different answer can fix ``error``:
    a retryable parse, schema, domain or policy error. Truncation, transport
    and stream failures are not (retry the request, or raise the limit)."""
    return error.layer in _REPAIRABLE_LAYERS and error.retryable and error.code not in _BUDGET_CODES


@dataclass
class RepairBudget:
    """The repair allowance of one run.

    Call :meth:`next_prompt` with each failure: it returns the message to
    send back to the model, or raises -- the error itself when it is not
    repairable (truncation, transport, non-retryable codes),
    ``PolicyError(REPEATED_ERROR)`` when the model repeats a fingerprint it
    was already told about, ``PolicyError(REPAIR_BUDGET_EXHAUSTED)`` once
    ``max_attempts`` repair prompts were sent.
    """

    max_attempts: int = 2
    max_chars: int = DEFAULT_MAX_CHARS
    redactor: Redactor | None = None
    attempts: int = 0
    history: list[Fingerprint] = field(default_factory=list)

    def __post_init__(self) -> None:
        if type(self.max_attempts) is not int or self.max_attempts < 0:
            raise ValueError("max_attempts must be a non-negative int")
        count("max_chars", self.max_chars, minimum=MIN_CHARS)

    @property
    def remaining(self) -> int:
        return self.max_attempts - self.attempts

    def next_prompt(self, error: OutputError, **prompt_options: Any) -> str:
        """The repair message for ``error``, counted against the budget."""
        print_ = fingerprint(error)
        if error.code in TRUNCATION_CODES:
            raise _with_hint(error, _TRUNCATION_ADVICE)
        if not is_repairable(error):
            raise error
        if print_ in self.history:
            raise PolicyError(
                "REPEATED_ERROR",
                f"the model repeated {print_.code} at {print_.path or 'the same place'} after a repair prompt",
                path=print_.path,
                hint="the same error came back; change the prompt or the schema instead of asking again",
            ) from error
        if self.attempts >= self.max_attempts:
            raise PolicyError(
                "REPAIR_BUDGET_EXHAUSTED",
                f"{self.attempts} repair attempt(s) were spent; the last error was {print_.code}",
                path=print_.path,
            ) from error
        self.history.append(print_)
        self.attempts += 1
        prompt_options.setdefault("max_chars", self.max_chars)
        prompt_options.setdefault("redactor", self.redactor)
        return repair_prompt(error, **prompt_options)

    def to_dict(self) -> dict[str, Any]:
        """The state for a trace record."""
        return {
            "max_attempts": self.max_attempts,
            "attempts": self.attempts,
            "history": [f.to_dict() for f in self.history],
        }


def _with_hint(error: OutputError, hint: str) -> OutputError:
    """A copy of a (stream-layer) truncation error carrying ``hint``."""
    return type(error)(
        error.code,
        error.message,
        retryable=error.retryable,
        offset=error.offset,
        path=error.path,
        issues=error.issues,
        hint=hint,
    )


# ---------------------------------------------------------------- the prompt


def _one_line(text: str) -> str:
    """``text`` on one line, one character per character (so the caret
    stays aligned): raw line breaks and tabs become spaces."""
    return text.replace("\r", " ").replace("\n", " ").replace("\t", " ")


def _excerpt(doc: str, offset: int) -> tuple[str, int]:
    """A one-line excerpt around ``offset`` and the caret column in it."""
    start = max(0, offset - _EXCERPT_RADIUS)
    end = min(len(doc), offset + _EXCERPT_RADIUS)
    before = ("..." if start > 0 else "") + _one_line(doc[start:offset])
    after = _one_line(doc[offset:end]) + ("..." if end < len(doc) else "")
    return before + after, len(before)


def _escape_fix(doc: str, offset: int) -> str | None:
    """For ``\\d`` at ``offset`` (or at most two characters before it): the
    concrete rewrite, to follow the table's fix."""
    backslash = doc.rfind("\\", max(0, offset - 2), offset + 1)
    if backslash < 0:
        return None
    char = doc[backslash + 1 : backslash + 2]
    if not char or char in '"\\/bfnrtu':
        return None
    shown = _one_line(char)
    return f'write \\\\{shown} instead of \\{shown} (valid escapes are \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)'


def _parse_section(error: ParseError, text: str | None, redactor: Redactor) -> list[str]:
    doc = text if text is not None else (error.doc or "")
    offset = error.pos or 0
    lines = [f"Position: line {error.lineno}, column {error.colno} (character {offset})."]
    if doc and 0 <= offset <= len(doc):
        # Mask first, then cut: a credential the excerpt would cut in half is
        # no longer one to the patterns, so not a fragment of one may show.
        shown, shown_offset = redactor.redact_with_offset(doc, offset)
        excerpt, caret = _excerpt(shown, shown_offset)
        lines += ["Near:", "  " + excerpt, "  " + " " * caret + "^"]
    # The fix the error's hint gives: the table's fix when the hint was
    # written from the table (or the error carries no hint), else the hint
    # of the grammar that raised it.
    fix = fix_text(error.code, doc, offset)
    if fix is None or (error.hint is not None and not error.hint.endswith(fix)):
        fix = error.hint
    rewrite = _escape_fix(doc, offset) if error.code == "INVALID_ESCAPE" else None
    if rewrite:
        fix = f"{fix}; {rewrite}"
    if fix:
        lines.append(f"Fix: {fix}.")
    return lines


def _issue_lines(error: OutputError, high_impact: frozenset[str]) -> list[str]:
    lines = []
    issues = list(error.issues)
    for issue in issues[:_MAX_ISSUES]:
        path = str(issue.get("path", "$"))
        code = str(issue.get("code", "invalid"))
        expected = issue.get("expected")
        line = f"- {path}: {code}"
        if expected is not None:
            line += f" (expected {expected})"
        leaf = re.split(r"[.\[\]]", path.rstrip("]"))[-1].strip("'\"")
        if code in ("required", "missing") and leaf in high_impact:
            line += "; do not invent this value: if you do not know it, do not make the call"
        lines.append(line)
    if len(issues) > _MAX_ISSUES:
        lines.append(f"- and {len(issues) - _MAX_ISSUES} more issue(s)")
    return lines


def _batch_lines(error: OutputError) -> list[str]:
    """What the model should do with the other calls of the failed call's batch."""
    others = [entry for entry in error.batch if entry.get("call_id") != error.call_id]
    if not others:
        return []
    lines = ["None of the calls in this response ran. The others:"]
    for entry in others[:_MAX_ISSUES]:
        call = f"- call {entry.get('call_id')!r} to {entry.get('tool')!r}: "
        if entry.get("status") == "not_run":
            lines.append(call + "not run because of this error; send it again unchanged with the corrected call")
        else:
            lines.append(call + f"refused too ({entry.get('code')}); correct it as well or leave it out")
    if len(others) > _MAX_ISSUES:
        lines.append(f"- and {len(others) - _MAX_ISSUES} more call(s)")
    return lines


def _writes_calls(reply: str) -> bool:
    """Whether ``reply`` writes tool calls as ``<tool_call>`` blocks, or
    fails to (a tag only quoted, or in the strings of one JSON value, is not
    a call)."""
    if not _has_tag(reply):
        return False
    try:
        return bool(parse_tool_calls(reply).calls)
    except OutputError:
        return True


def repair_prompt(
    error: OutputError,
    *,
    text: str | None = None,
    schema_name: str | None = None,
    target: Literal["value", "tool_call", "text_calls"] | None = None,
    high_impact: Iterable[str] = (),
    max_chars: int = DEFAULT_MAX_CHARS,
    redactor: Redactor | None = None,
) -> str:
    """The message to send back to the model after ``error``.

    ``text`` is the model's output the error's offset points into (a
    ``ParseError`` carries it already); ``schema_name`` names the schema in
    the closing instruction; ``high_impact`` lists argument names the model
    must never guess (a missing one is reported with "do not invent").
    ``target`` is inferred from the error: an error about one tool call
    (``error.call_id``, or a ``$.calls[...]`` path) asks for that call again,
    named by its id and tool, and says what to do with the other calls of
    its batch (``error.batch``); an error in a reply that writes its calls
    as ``<tool_call>`` blocks (``text``, or the parse error's own text,
    holds one) asks for the reply again with each call in its block -- asked
    for one JSON value, the model would answer without the call; any other
    error asks for one JSON value.
    Credentials found by ``redactor`` (default: API keys and bearer tokens)
    are masked. Raises ``ValueError`` for an error that must not be sent for
    repair (see :func:`is_repairable`).
    """
    if error.code in TRUNCATION_CODES:
        raise ValueError(f"{error.code}: {_TRUNCATION_ADVICE}")
    if not is_repairable(error):
        raise ValueError(f"{error.code} is not repairable by the model; handle it in the caller")
    count("max_chars", max_chars, minimum=MIN_CHARS)
    redactor = redactor or Redactor()
    meaning = ERROR_CODES[error.code].meaning
    lines = [f"Your previous response could not be used: {error.layer} error {error.code} ({meaning})."]
    if error.path:
        lines.append(f"Where: {error.path}")
    if isinstance(error, ParseError):
        lines += _parse_section(error, text, redactor)
    else:
        lines += _issue_lines(error, frozenset(high_impact))
        if error.hint:
            lines.append(f"Fix: {redactor.redact_text(error.hint)}")
    if target is None:
        reply = text if text is not None else error.doc if isinstance(error, ParseError) else None
        if error.call_id is not None or (error.path or "").startswith("$.calls"):
            target = "tool_call"
        elif reply and _writes_calls(reply):
            target = "text_calls"
        else:
            target = "value"
    against = f" matching the schema {schema_name}" if schema_name else " matching the supplied schema"
    if target == "tool_call" and error.call_id is not None:
        lines.insert(1, f"The call: {error.call_id!r} to the tool {error.tool!r}.")
        lines += _batch_lines(error)
        closing = (
            f"Send the call {error.call_id!r} to {error.tool!r} again with corrected arguments{against}; "
            "change only what is wrong."
        )
    elif target == "tool_call":
        closing = f"Send the tool call again with corrected arguments{against}; change only what is wrong."
    elif target == "text_calls":
        closing = (
            "None of the calls in your reply ran. Send the reply again with each tool call in its own "
            '<tool_call>{"name": "...", "arguments": {...}}</tool_call> block; change only what is wrong.'
        )
    else:
        closing = f"Return exactly one corrected JSON value{against}; change only what is wrong."
    body = "\n".join(redactor.redact_text(line) for line in lines)
    budget = max_chars - len(closing) - 1
    if len(body) > budget:
        body = body[: max(0, budget - 4)].rstrip() + " ..."
    return f"{body}\n{closing}"


# ---------------------------------------------------------------- deterministic fixes


@dataclass(frozen=True, slots=True)
class Fixed:
    """The text after deterministic fixes, the value parsed from it, and the
    names of the fixes that changed something (empty: nothing was repaired)."""

    value: Any
    text: str
    repaired: tuple[Fix, ...]


_STRING_SPECIAL: Final = re.compile(r'["\\]')


def fix_invalid_escapes(text: str) -> tuple[str, int]:
    """Double every backslash, inside JSON strings only, that starts an
    escape JSON does not define (``\\d`` -> ``\\\\d``). Returns the new
    text and the number of escapes fixed."""
    out: list[str] = []
    fixed = 0
    index = 0
    in_string = False
    length = len(text)
    while index < length:
        if not in_string:
            quote = text.find('"', index)
            if quote < 0:
                out.append(text[index:])
                break
            out.append(text[index : quote + 1])
            index = quote + 1
            in_string = True
            continue
        match = _STRING_SPECIAL.search(text, index)
        if match is None:
            out.append(text[index:])
            break
        pos = match.start()
        out.append(text[index:pos])
        if match.group() == '"':
            out.append('"')
            in_string = False
            index = pos + 1
            continue
        following = text[pos + 1 : pos + 2]
        if following and following in '"\\/bfnrtu':
            out.append(text[pos : pos + 2])
            index = pos + 2
        else:
            out.append("\\\\")
            fixed += 1
            index = pos + 1
    return "".join(out), fixed


def apply_fixes(text: str, fixes: Iterable[Fix] = (), *, limits: Limits | None = None) -> Fixed:
    """Parse ``text`` as one JSON value, applying only the named
    deterministic ``fixes`` when the strict parse fails on what they fix.

    With no fixes this is a strict parse. A fix is applied only for the error
    it addresses (``invalid_escapes`` for ``INVALID_ESCAPE``,
    ``markdown_fence`` for ``MARKDOWN_FENCE``) and is named in
    :attr:`Fixed.repaired`; any other error is raised unchanged.
    """

    wanted = tuple(dict.fromkeys(fixes))
    for fix in wanted:
        if fix not in FIXES:
            raise ValueError(f"unknown fix {fix!r}; the whitelist is {FIXES}")
    allow_fence = "markdown_fence" in wanted
    repaired: list[Fix] = []
    try:
        result = parse_json_text(text, limits=limits, allow_fence=allow_fence)
    except ParseError as error:
        if error.code != "INVALID_ESCAPE" or "invalid_escapes" not in wanted:
            raise
        fixed_text, count = fix_invalid_escapes(text)
        if not count:
            raise
        text = fixed_text
        repaired.append("invalid_escapes")
        result = parse_json_text(text, limits=limits, allow_fence=allow_fence)
    if result.repaired:
        repaired.append("markdown_fence")
    return Fixed(result.value, text, tuple(repaired))


def fix_response(
    response: NormalizedResponse, fixes: Iterable[Fix] = (), *, limits: Limits | None = None
) -> FixedResponse:
    """A :class:`~decisions.types.FixedResponse`: ``response`` with the named
    deterministic ``fixes`` applied to each tool call's arguments and to the
    answer text (``.response``), and the fixes that changed something
    (``.applied``). Hand it to :func:`decisions.decide` as it is: a repaired
    response is decided with ``repaired=True``, so a side-effecting tool
    refuses the call.

    Only complete responses are touched (a cut-off one goes to the
    completeness gate as it is), only text that fails the strict parse with
    the error a fix addresses is changed, and nothing is ever added: a
    missing argument stays missing. A provisional snapshot is
    ``StreamError(SNAPSHOT_NOT_DECIDABLE)``, as in ``decide``.
    """
    if isinstance(response, ResponseSnapshot):
        raise snapshot_error(response.state)
    wanted = tuple(fixes)
    if not wanted or response.finish_reason not in ("stop", "tool_calls"):
        return FixedResponse(response, ())
    applied: list[Fix] = []
    items: list[Item] = []
    for item in response.items:
        if isinstance(item, ToolCallItem) and item.complete:
            item = replace(item, arguments=_fixed_text(item.arguments, wanted, applied, limits))
        items.append(item)
    if not response.tool_calls and response.text.strip():
        text = _fixed_text(response.text, wanted, applied, limits)
        if applied:
            items = [item for item in items if not isinstance(item, TextItem)]
            items.append(TextItem(item_id="text_fixed", text=text))
    if not applied:
        return FixedResponse(response, ())
    return FixedResponse(replace(response, items=tuple(items)), tuple(dict.fromkeys(applied)))


def _fixed_text(text: str, fixes: tuple[Fix, ...], applied: list[Fix], limits: Limits | None) -> str:
    try:
        fixed = apply_fixes(text, fixes, limits=limits)
    except ParseError:
        return text  # not fixable: decide reports the error at its real place
    if not fixed.repaired:
        return text
    applied.extend(fixed.repaired)
    return canonical_json(fixed.value)
