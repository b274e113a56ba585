"""The pure twin of ``decisions._native.Constructor``: instances of a frozen,
slotted dataclass built from positional field values, as its ``__init__``
sets them (each slot through ``object.__setattr__``), without running
``__post_init__``: for values whose invariants the caller has established.

And the builders of the response's objects the pure pipeline makes per
response (``new_usage``, ``new_text_item``, ``new_tool_call_item``,
``new_response``): each slot set by its own descriptor, what
``object.__setattr__`` finds and calls, the way the class's ``__init__``
sets it; a frozen dataclass's keyword ``__init__`` costs more than twice as
much. None of these classes has a ``__post_init__``."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from ..types import Item, NormalizedResponse, TextItem, ToolCallItem, Usage

__all__ = ["Constructor", "new_response", "new_text_item", "new_tool_call_item", "new_usage"]

_new = object.__new__
_set = object.__setattr__


class Constructor:
    """Builds instances of one dataclass from its field values, in field order."""

    __slots__ = ("_cls", "_fields")

    def __init__(self, cls: type, /) -> None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"Constructor takes a dataclass, not {cls.__name__}")
        names = [f.name for f in dataclasses.fields(cls)]
        slots = list(getattr(cls, "__slots__", ()))
        if slots != names:
            raise ValueError(f"Constructor needs a dataclass whose slots are its fields, which {cls.__name__} is not")
        self._cls = cls
        self._fields = tuple(names)

    @property
    def cls(self) -> type:
        """The class this constructor builds."""
        return self._cls

    def __call__(self, *values: Any) -> Any:
        """An instance with each field set to the value at its position."""
        if len(values) != len(self._fields):
            raise TypeError(f"{self._cls.__name__} takes {len(self._fields)} field values, not {len(values)}")
        instance = _new(self._cls)
        for name, value in zip(self._fields, values):
            _set(instance, name, value)
        return instance


def _setters(cls: type, *names: str) -> tuple[Callable[[Any, Any], None], ...]:
    """The descriptors' setters of ``cls``'s slots ``names``, which must be
    its fields, in order, without a ``__post_init__``."""
    if tuple(f.name for f in dataclasses.fields(cls)) != names or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}'s fields are not {names}")
    return tuple(cls.__dict__[name].__set__ for name in names)


_usage_input, _usage_output, _usage_cached, _usage_reasoning = _setters(
    Usage, "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens"
)


def new_usage(input_tokens: int | None, output_tokens: int | None, cached: int | None, reasoning: int | None) -> Usage:
    """``Usage(input_tokens=..., output_tokens=..., cached_tokens=..., reasoning_tokens=...)``."""
    usage = _new(Usage)
    _usage_input(usage, input_tokens)
    _usage_output(usage, output_tokens)
    _usage_cached(usage, cached)
    _usage_reasoning(usage, reasoning)
    return usage


_text_item_id, _text_text = _setters(TextItem, "item_id", "text")


def new_text_item(item_id: str, text: str) -> TextItem:
    """``TextItem(item_id=..., text=...)``."""
    item = _new(TextItem)
    _text_item_id(item, item_id)
    _text_text(item, text)
    return item


_call_item_id, _call_call_id, _call_name, _call_arguments, _call_complete, _call_generated, _call_kind = _setters(
    ToolCallItem, "item_id", "call_id", "name", "arguments", "complete", "call_id_generated", "call_kind"
)


def new_tool_call_item(
    item_id: str, call_id: str, name: str, arguments: str, complete: bool, call_id_generated: bool, call_kind: str
) -> ToolCallItem:
    """``ToolCallItem(item_id=..., call_id=..., name=..., arguments=...,
    complete=..., call_id_generated=..., call_kind=...)``."""
    item = _new(ToolCallItem)
    _call_item_id(item, item_id)
    _call_call_id(item, call_id)
    _call_name(item, name)
    _call_arguments(item, arguments)
    _call_complete(item, complete)
    _call_generated(item, call_id_generated)
    _call_kind(item, call_kind)
    return item


(
    _response_provider,
    _response_id,
    _response_model,
    _response_items,
    _response_finish,
    _response_raw_finish,
    _response_usage,
    _response_unknown,
) = _setters(
    NormalizedResponse,
    "provider",
    "response_id",
    "model",
    "items",
    "finish_reason",
    "raw_finish_reason",
    "usage",
    "unknown_events",
)


def new_response(
    provider: str,
    response_id: str | None,
    model: str | None,
    items: tuple[Item, ...],
    finish_reason: str,
    raw_finish_reason: str | None,
    usage: Usage | None,
    unknown_events: Mapping[str, int],
) -> NormalizedResponse:
    """``NormalizedResponse(provider=..., response_id=..., model=..., items=...,
    finish_reason=..., raw_finish_reason=..., usage=..., unknown_events=...)``."""
    response = _new(NormalizedResponse)
    _response_provider(response, provider)
    _response_id(response, response_id)
    _response_model(response, model)
    _response_items(response, items)
    _response_finish(response, finish_reason)
    _response_raw_finish(response, raw_finish_reason)
    _response_usage(response, usage)
    _response_unknown(response, unknown_events)
    return response
