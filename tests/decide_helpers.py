"""Builders shared by the decision-layer tests."""

from __future__ import annotations

import pytest

from decisions import _backend
from decisions.types import FinishReason, Item, NormalizedResponse, TextItem, ToolCallItem

#: The decision layers parse through ``decisions.loads``.
needs_loads = pytest.mark.skipif(not hasattr(_backend.impl, "loads"), reason="decisions.loads is not built yet")


def plain_id(value: object) -> str:
    """A test id for ``value`` (a str in quotes, anything else its repr) with
    each character outside printable ASCII, and each backslash, written as
    its code point: pytest cannot run a test by an id holding a backslash."""
    text = repr(value)
    return "".join(c if " " <= c < "\x7f" and c != "\\" else f"<U+{ord(c):04X}>" for c in text)


#: Each test of a module twice, once per path of ``decide`` (the
#: ``decide_paths`` fixture of conftest.py).
both_paths = pytest.mark.usefixtures("decide_paths")


def call(
    name: str = "read_file",
    arguments: str = '{"path": "a.txt"}',
    *,
    call_id: str = "call_1",
    complete: bool = True,
    generated: bool = False,
) -> ToolCallItem:
    return ToolCallItem(
        item_id=f"item_{call_id}",
        call_id=call_id,
        name=name,
        arguments=arguments,
        complete=complete,
        call_id_generated=generated,
    )


def text(value: str, item_id: str = "msg_1") -> TextItem:
    return TextItem(item_id=item_id, text=value)


def response(*items: Item, finish: FinishReason | str = "tool_calls", raw: str | None = None) -> NormalizedResponse:
    return NormalizedResponse(
        provider="openai-chat",
        response_id="resp_1",
        model="model-x",
        items=tuple(items),
        finish_reason=finish,  # type: ignore[arg-type]
        raw_finish_reason=raw,
    )


READ_FILE_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string", "minLength": 1}, "limit": {"type": "integer", "minimum": 1}},
    "required": ["path"],
    "additionalProperties": False,
}
