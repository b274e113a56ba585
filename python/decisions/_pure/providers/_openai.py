"""What the two OpenAI mappers share (pure twin of
``rust/src/core/providers/openai_common.rs``): the OpenAI-style error object,
read with the shape readers of the mapper that meets it.
"""

from __future__ import annotations

from typing import Any

from ...errors import OutputError, new_error
from ...types import ResponseFailed
from ._shape import U64_MAX, Shape

__all__ = ["RETRYABLE_ERRORS", "Annotation", "failure", "filtered", "first", "unscreened"]

#: what one content-filter annotation says: ``(path, True)`` for the first
#: ``filtered: true``, ``(path, False)`` for the first ``error`` (the filter
#: did not run); a filter that withheld output wins over one that did not run
Annotation = tuple[str, bool]

#: provider error types/codes that say asking again may succeed
RETRYABLE_ERRORS = frozenset(
    {
        "server_error",
        "rate_limit_exceeded",
        "rate_limit_error",
        "overloaded_error",
        "service_unavailable",
        "vector_store_timeout",
        "overloaded",  # TGI's error_type
        # an HTTP status as the code (OpenRouter's mid-stream errors, Azure's "429")
        "429",
        "500",
        "502",
        "503",
        "504",
    }
)


def failure(s: Shape, value: Any, what: str, path: str) -> ResponseFailed:
    """The failure an OpenAI-style ``{"code", "message", "type"}`` error
    object at ``path`` stands for: its members checked in that order. A
    string is the message alone (Hugging Face TGI streams
    ``{"error": "...", "error_type": "..."}``), code ``error``."""
    if type(value) is str:
        return ResponseFailed(code="error", message=value, retryable=False, error_type=None)
    err = s.obj(value, what, path)
    code = err.get("code")
    if code is not None and (type(code) is not str and (type(code) is not int or not -(2**63) <= code <= U64_MAX)):
        raise s.malformed(what, f"{path}.code")
    message = s.opt_str(err, "message", what, path) or ""
    error_type = s.opt_str(err, "type", what, path)
    code_text = str(code) if code is not None else (error_type or "error")
    retryable = code_text in RETRYABLE_ERRORS or (error_type in RETRYABLE_ERRORS)
    return ResponseFailed(code=code_text, message=message, retryable=retryable, error_type=error_type)


def filtered(s: Shape, results: dict[str, Any], what: str, at: str) -> Annotation | None:
    """What Azure's ``content_filter_results`` at ``at`` says, read with the
    shape readers ``s`` of the mapper that meets it (see :data:`Annotation`;
    categories in sorted order), or None. Every category is an object (its ``details`` entries too) or a list of
    objects, whose ``filtered`` is a boolean when present; the results'
    own ``error``, when not null, is an object."""
    hit = None
    unscreened = None
    for category in sorted(results):
        where = f"{at}.{category}"
        value = results[category]
        if category == "error":
            if value is not None:
                s.obj(value, what, where)
                unscreened = unscreened or where
            continue
        if type(value) is list:
            entries = [(f"{where}[{i}]", entry) for i, entry in enumerate(value)]
        else:
            entries = [(where, s.obj(value, what, where))]
            details = s.opt_list(value, "details", what, where) or []
            entries += [(f"{where}.details[{i}]", entry) for i, entry in enumerate(details)]
        for place, entry in entries:
            entry = s.obj(entry, what, place)
            if s.opt_bool(entry, "filtered", what, place):
                hit = hit or place
            if entry.get("error") is not None:
                unscreened = unscreened or f"{place}.error"
    if hit is not None:
        return hit, True
    return None if unscreened is None else (unscreened, False)


def first(one: Annotation | None, other: Annotation | None) -> Annotation | None:
    """The annotation that wins of two: a filter hit over a filter that did
    not run, else the earlier."""
    if one is None or (other is not None and other[1] and not one[1]):
        return other
    return one


def unscreened(at: str) -> OutputError:
    """The error of a filter that did not run (an ``error`` at ``at``): the
    output was not screened, and asking again may get it screened."""
    return new_error(
        "PROVIDER_ERROR", "the content filter did not run, so the output was not screened", path=at, retryable=True
    )
