"""The Gemini mapper's decisions written out on both backends (the mutation
run sees the pure backend alone): the error object in full, and every error
with its message and path."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from mapper_outcomes import body, events

P = "gemini"
HI = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}}]}


@pytest.mark.parametrize(
    ("error", "code", "message", "retryable", "status"),
    [
        (
            {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"},
            "RESOURCE_EXHAUSTED",
            "quota",
            True,
            "RESOURCE_EXHAUSTED",
        ),
        (
            {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"},
            "INVALID_ARGUMENT",
            "bad",
            False,
            "INVALID_ARGUMENT",
        ),
        # without a status the code names the failure, and says whether it is retryable
        ({"code": 503, "message": "busy"}, "503", "busy", True, None),
        ({"code": 500}, "500", "", True, None),
        ({"code": 0}, "0", "", False, None),
        ({"code": 2**64 - 1}, "18446744073709551615", "", False, None),
        ({"code": 500, "status": "INTERNAL"}, "INTERNAL", "", True, "INTERNAL"),
        ({"code": 400, "status": "UNAVAILABLE"}, "UNAVAILABLE", "", True, "UNAVAILABLE"),
        ({"code": 400, "status": ""}, "400", "", False, ""),
        ({"message": "gone"}, "UNKNOWN", "gone", False, None),
    ],
)
def test_an_error_in_full(
    impl: ModuleType, error: dict[str, Any], code: str, message: str, retryable: bool, status: str | None
) -> None:
    shown = f"{code}: {message}" if message else code
    assert body(impl, P, {"error": error}) == ("transport", "PROVIDER_ERROR", shown, None, None, retryable)
    assert events(impl, P, [HI, {"error": error}])[-1] == {
        "type": "response_failed",
        "code": code,
        "message": message,
        "retryable": retryable,
        "error_type": status,
    }


@pytest.mark.parametrize(
    ("error", "path"),
    [
        ({"code": -1}, "$.error.code"),
        ({"code": "429"}, "$.error.code"),
        ({"code": 429.0}, "$.error.code"),
        ({"status": 1}, "$.error.status"),
        ({"message": 1}, "$.error.message"),
    ],
)
def test_an_error_of_another_shape(impl: ModuleType, error: dict[str, Any], path: str) -> None:
    assert body(impl, P, {"error": error}) == (
        "stream",
        "MALFORMED_EVENT",
        "gemini error does not have the documented shape",
        path,
        None,
        False,
    )
