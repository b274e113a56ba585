"""What the two OpenAI mappers share (pure twin of
``rust/src/core/providers/openai_common.rs``): the OpenAI-style error object,
read with the shape readers of the mapper that meets it, and (until the
Responses mapper reads through ``_shape`` too) the readers it uses.
"""

from __future__ import annotations

from typing import Any

from ...errors import OutputError, new_error
from ...types import ResponseFailed
from ._shape import U64_MAX, Shape

__all__ = ["RETRYABLE_ERRORS", "failure"]

#: provider error types/codes that say asking again may succeed
RETRYABLE_ERRORS = frozenset(
    {"server_error", "rate_limit_exceeded", "rate_limit_error", "overloaded_error", "service_unavailable"}
)


def failure(s: Shape, value: Any, what: str, path: str) -> ResponseFailed:
    """The failure an OpenAI-style ``{"code", "message", "type"}`` error
    object at ``path`` stands for: its members checked in that order."""
    err = s.obj(value, what, path)
    code = err.get("code")
    if code is not None and (type(code) is not str and (type(code) is not int or not -(2**63) <= code <= U64_MAX)):
        raise s.malformed(what, f"{path}.code")
    message = s.opt_str(err, "message", what, path) or ""
    error_type = s.opt_str(err, "type", what, path)
    code_text = str(code) if code is not None else (error_type or "error")
    retryable = code_text in RETRYABLE_ERRORS or (error_type in RETRYABLE_ERRORS)
    return ResponseFailed(code=code_text, message=message, retryable=retryable, error_type=error_type)


# ---------------------------------------------------------------- typed-struct readers
# The Responses mapper's readers until it moves to ``_shape``: each accepts
# what the Rust mapper's serde structs accept.


def malformed(what: str, detail: str) -> OutputError:
    """The error for a known event whose shape does not fit."""
    return new_error("MALFORMED_EVENT", f"{what}: {detail}")


def obj(value: Any, what: str, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise malformed(what, f"{path} must be an object")
    return value


def opt_obj(d: dict[str, Any], key: str, what: str) -> dict[str, Any] | None:
    value = d.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise malformed(what, f"{key} must be an object")
    return value


def opt_list(d: dict[str, Any], key: str, what: str) -> list[Any] | None:
    value = d.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        raise malformed(what, f"{key} must be an array")
    return value


def opt_str(d: dict[str, Any], key: str, what: str) -> str | None:
    value = d.get(key)
    if value is None or isinstance(value, str):
        return value
    raise malformed(what, f"{key} must be a string")


def req_str(d: dict[str, Any], key: str, what: str) -> str:
    value = d.get(key)
    if isinstance(value, str):
        return value
    raise malformed(what, f"{key} must be a string")


def opt_u64(d: dict[str, Any], key: str, what: str) -> int | None:
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= U64_MAX:
        return value
    raise malformed(what, f"{key} must be a non-negative integer")
