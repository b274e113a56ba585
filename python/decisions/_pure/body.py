"""Whole bodies named as bodies (pure twin of ``rust/src/core/body.rs``):
what ``normalize`` says when a body is not a finished response."""

from __future__ import annotations

from typing import Final

from ..errors import OutputError, StreamError

__all__ = ["body_error", "QUOTE_CHARS"]

#: how many characters of a body that is not JSON an error quotes
QUOTE_CHARS: Final = 60


def body_error(body: str | bytes | bytearray | memoryview, error: OutputError) -> OutputError:
    """The error of a whole body for ``error``, the pipeline's error for it:
    no finish signal is ``BODY_NOT_FINISHED``, text that is not JSON is
    ``NOT_A_RESPONSE_BODY`` (quoting its start); any other error is kept."""
    if error.code == "NO_TERMINAL_EVENT":
        return StreamError("BODY_NOT_FINISHED", "the body is not a finished response: it has no finish signal")
    if error.code == "MALFORMED_EVENT" and error.path is None and error.message == "event data is not valid JSON":
        text = body if isinstance(body, str) else bytes(body).decode("utf-8", "replace")
        start = text.lstrip()[:QUOTE_CHARS]
        what = "an HTML or XML page" if start.startswith("<") else "text"
        return StreamError("NOT_A_RESPONSE_BODY", f'the body is not JSON but {what}: "{start}"')
    return error
