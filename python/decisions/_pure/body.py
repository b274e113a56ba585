"""Whole bodies named as bodies (pure twin of ``rust/src/core/body.rs``):
what ``normalize`` says when a body is not a finished response."""

from __future__ import annotations

from typing import Final

from ..errors import OutputError, StreamError
from ..providers import looks_like, shapeless

__all__ = ["body_error", "foreign_body", "shapeless_body", "QUOTE_CHARS"]

#: The codes of a body its provider's mapper could not read as a response.
_UNREAD: Final = frozenset({"MALFORMED_EVENT", "NO_TERMINAL_EVENT"})

#: how many characters of a body that is not JSON an error quotes
QUOTE_CHARS: Final = 60

#: The field names an event stream's first line starts with (``""``: a comment).
_SSE_FIELDS: Final = frozenset({"", "data", "event", "id", "retry"})


def _event_stream(start: str) -> bool:
    """Whether ``start`` (a body's first characters) begins as an event
    stream does: a ``data``, ``event``, ``id`` or ``retry`` field, or a comment."""
    name, colon, _ = start.partition(":")
    return bool(colon) and name in _SSE_FIELDS


def foreign_body(provider: str, decoded: object) -> OutputError | None:
    """``NOT_A_RESPONSE_BODY`` when the decoded body given to ``provider`` is
    recognisably another provider's (:func:`decisions.providers.looks_like`)."""
    what = looks_like(provider, decoded)
    if what is None:
        return None
    return StreamError(
        "NOT_A_RESPONSE_BODY", f"the body is not a response of provider {provider!r}: this looks like {what}"
    )


def shapeless_body(provider: str, decoded: object) -> OutputError | None:
    """``NOT_A_RESPONSE_BODY`` when the decoded body given to ``provider``,
    read as nothing or without a finish signal, has no provider's shape at
    all (:func:`decisions.providers.shapeless`)."""
    what = shapeless(provider, decoded)
    if what is None:
        return None
    return StreamError("NOT_A_RESPONSE_BODY", f"the body is not a response of provider {provider!r}: {what}")


def body_error(
    body: str | bytes | bytearray | memoryview,
    error: OutputError,
    provider: str | None = None,
    decoded: object = None,
) -> OutputError:
    """The error of a whole body for ``error``, the pipeline's error for it:
    a body ``provider``'s mapper could not read (``decoded``, when it is JSON)
    that looks like another provider's is ``NOT_A_RESPONSE_BODY`` saying what
    it looks like, as is one without a finish signal that has no provider's
    shape at all; no finish signal is otherwise ``BODY_NOT_FINISHED``, text that is
    not JSON is ``NOT_A_RESPONSE_BODY`` (quoting its start); any other error
    is kept."""
    if provider is not None and error.code in _UNREAD:
        foreign = foreign_body(provider, decoded)
        if foreign is None and error.code == "NO_TERMINAL_EVENT":
            foreign = shapeless_body(provider, decoded)
        if foreign is not None:
            return foreign
    if error.code == "NO_TERMINAL_EVENT":
        return StreamError("BODY_NOT_FINISHED", "the body is not a finished response: it has no finish signal")
    if error.code == "MALFORMED_EVENT" and error.path is None and error.message == "event data is not valid JSON":
        text = body if isinstance(body, str) else bytes(body).decode("utf-8", "replace")
        start = text.lstrip()[:QUOTE_CHARS]
        if start.startswith("<"):
            what = "an HTML or XML page"
        elif _event_stream(start):
            what = "an event stream (a stream is read with StreamAssembler)"
        else:
            what = "text"
        return StreamError("NOT_A_RESPONSE_BODY", f'the body is not JSON but {what}: "{start}"')
    return error
