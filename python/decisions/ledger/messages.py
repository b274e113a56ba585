"""Tool results as the messages each provider expects back: what
:meth:`~decisions.ledger.core.Ledger.result_messages` and
:class:`~decisions.recover.results.ResultBook` send to the model."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..errors import DomainError
from ..limits import DEFAULT_LIMITS, Limits
from ..providers import PROVIDERS
from ..validate.decision import ToolCall
from .results import ToolResult, check_result_size

__all__ = ["RESULT_PROVIDERS", "result_messages"]

#: The providers whose tool-result messages are written.
RESULT_PROVIDERS: tuple[str, ...] = PROVIDERS


def result_messages(
    provider: str, pairs: list[tuple[ToolCall, ToolResult]], *, limits: Limits | None = None
) -> list[dict[str, Any]]:
    """Messages for ``(call, result)`` pairs in the wire format of ``provider``:

    - ``openai-chat``: one ``{"role": "tool", "tool_call_id", "content"}`` per result;
    - ``openai-responses``: one ``{"type": "function_call_output", "call_id", "output"}`` per result;
    - ``anthropic``: one user message of ``tool_result`` blocks (``tool_use_id``, ``is_error``);
    - ``gemini``: one user turn of ``functionResponse`` parts (``name``, ``response``
      with ``output`` or ``error``, and ``id`` unless the call id was generated).

    A result that does not pair with its call is ValueError; two results for
    one call are ``DUPLICATE_RESULT``; content longer than
    ``limits.max_result_bytes`` as text is ``RESULT_TOO_LARGE`` (measured
    before it is written), content that is not JSON text
    (:attr:`ToolResult.text`) ``RESULT_SCHEMA_MISMATCH``: no message is
    written then.
    """
    return written(provider, pairs, DEFAULT_LIMITS if limits is None else limits)


def written(
    provider: str, pairs: list[tuple[ToolCall, ToolResult]], limits: Limits, notes: Collection[str] = ()
) -> list[dict[str, Any]]:
    """:func:`result_messages`; the results of the calls in ``notes`` are the
    ledger's own word on a call that did not commit (its error's code,
    message and hint), not a tool's output, so no size limit applies to them."""
    if provider not in RESULT_PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; expected one of {RESULT_PROVIDERS}")
    seen: set[str] = set()
    for call, result in pairs:
        if call.call_id != result.call_id:
            raise ValueError(f"result {result.call_id!r} does not pair with call {call.call_id!r}")
        if result.call_id in seen:
            raise DomainError(
                "DUPLICATE_RESULT",
                f"two results for call {result.call_id!r}",
                path="$.call_id",
                call_id=result.call_id,
                hint="each call takes exactly one result",
            )
        seen.add(result.call_id)
        if result.call_id not in notes:
            check_result_size(result, limits)
        result.text  # noqa: B018  (raises when the content is not JSON text)
    if provider == "openai-chat":
        return [{"role": "tool", "tool_call_id": r.call_id, "content": r.text} for _, r in pairs]
    if provider == "openai-responses":
        return [{"type": "function_call_output", "call_id": r.call_id, "output": r.text} for _, r in pairs]
    if provider == "anthropic":
        blocks = [
            {"type": "tool_result", "tool_use_id": r.call_id, "content": r.text, "is_error": r.status != "ok"}
            for _, r in pairs
        ]
        return [{"role": "user", "content": blocks}]
    if provider == "gemini":
        parts = []
        for call, r in pairs:
            response: dict[str, Any] = {"output" if r.status == "ok" else "error": r.content}
            body: dict[str, Any] = {"name": call.name, "response": response}
            if not call.call_id_generated:
                body["id"] = call.call_id
            parts.append({"functionResponse": body})
        return [{"role": "user", "parts": parts}]
    raise ValueError(f"unknown provider {provider!r}; expected one of {RESULT_PROVIDERS}")
