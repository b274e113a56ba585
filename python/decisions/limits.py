"""Every bound the package enforces, in one frozen object.

Each limit is checked before the memory it guards is spent: a document is
measured before it is parsed, a string before it is copied, a tool call's
arguments before a delta is appended. The defaults are sized for coding
agents, whose ``write_file`` arguments of several hundred KiB are normal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from operator import attrgetter, is_
from typing import Final

__all__ = ["Limits", "DEFAULT_LIMITS", "MAX_DEPTH_CEILING", "PYTHON_ONLY", "checked"]

KiB: Final = 1024
MiB: Final = 1024 * KiB

#: No ``max_depth`` above this is accepted: both parsers are iterative, but
#: the Python objects they build are freed recursively by CPython.
MAX_DEPTH_CEILING: Final = 10_000


@dataclass(frozen=True, kw_only=True, slots=True)
class Limits:
    """Bounds on documents, strings, numbers, streams and tool calls.

    All sizes are in bytes of UTF-8. Build a variant with
    ``dataclasses.replace(DEFAULT_LIMITS, max_depth=128)``.
    """

    # --- one JSON document (tool arguments, a structured final answer) ---
    #: 8 MiB: a write_file of several hundred KiB, escaped, with room to spare.
    max_document_bytes: int = 8 * MiB
    #: 64 levels: model output rarely nests past 10; deeper is a loop or an attack.
    max_depth: int = 64
    #: 4 MiB per string: one file's content in a write_file call.
    max_string_bytes: int = 4 * MiB
    #: 100,000 items per array: a 5,000-record table fits twenty times over.
    max_array_items: int = 100_000
    #: 10,000 members per object: real objects have tens; 10^5 keys is hash flooding.
    max_object_members: int = 10_000
    #: 1,000,000 values per document (every scalar, array and object counts one).
    max_values: int = 1_000_000
    #: 100 characters per number: longer number text is never a real value and
    #: is rejected before any conversion (no quadratic int parsing).
    max_number_length: int = 100

    # --- streams ---
    #: 8 MiB of argument JSON per tool call (same as one document); Gemini's
    #: streamed ``partialArgs`` are refused as soon as a lower bound of their
    #: JSON size passes it.
    max_call_argument_bytes: int = 8 * MiB
    #: 128 tool calls per response: parallel calls are a handful in practice.
    max_calls_per_response: int = 128
    #: 4,096 items (text, reasoning, refusal and tool calls) per response: real
    #: responses have a handful; tool calls stay bounded by max_calls_per_response.
    #: An empty item adds no content bytes, so without this bound a stream of
    #: empty items would be limited only by max_stream_events.
    max_items_per_response: int = 4096
    #: 32 MiB of accumulated content (text, reasoning, arguments) per response.
    max_response_bytes: int = 32 * MiB
    #: 32 MiB per SSE line: a terminal event (``response.completed``) repeats
    #: the whole output, arguments escaped, on one line.
    max_sse_line_bytes: int = 32 * MiB
    #: 32 MiB of data per SSE event, for the same reason.
    max_sse_event_bytes: int = 32 * MiB
    #: 2,000,000 events: a 8 MiB argument in 8-byte deltas is 10^6 events.
    max_stream_events: int = 2_000_000
    #: 256 MiB per stream: deltas are wrapped in ~100 bytes of JSON each.
    max_stream_bytes: int = 256 * MiB
    #: 1 MiB of comments, keep-alives and empty events without a data event:
    #: a stream of pings cannot run forever.
    max_bytes_without_data: int = 1 * MiB

    # --- tool results (checked in Python, by the ledger and the result messages) ---
    #: 4 MiB of a tool result's content as text (a string as is, anything else as
    #: JSON): a whole source file or a long command log; more is for the host to cut.
    max_result_bytes: int = 4 * MiB
    #: 10,000 effects a tool result may claim (each one is looked at, digested
    #: and stored); their paths together are bounded by ``max_result_bytes``.
    max_result_effects: int = 10_000

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if type(value) is not int or value < 1:
                raise ValueError(f"Limits.{field.name} must be a positive int, not {value!r}")
        if self.max_depth > MAX_DEPTH_CEILING:
            raise ValueError(f"Limits.max_depth may not exceed {MAX_DEPTH_CEILING}")
        if self.max_number_length > 10_000:
            raise ValueError("Limits.max_number_length may not exceed 10000")


DEFAULT_LIMITS: Final = Limits()

_NAMES: Final = tuple(field.name for field in fields(Limits))
_read: Final = attrgetter(*_NAMES)
_DEPTH: Final = _NAMES.index("max_depth")
_NUMBER_LENGTH: Final = _NAMES.index("max_number_length")


def checked(limits: Limits) -> Limits:
    """``limits`` as both backends take it: each field read once and checked
    as ``__post_init__`` checks it (an exact int, positive, the ceilings), as
    a frozen ``Limits`` may have been changed by ``object.__setattr__``, made
    without ``__init__`` or be of a subclass whose fields are properties. A
    ``Limits`` itself is returned as it is, any other a ``Limits`` of the
    values read (nothing is read from it again); ValueError names the first
    field that is not a positive int (an int by its value, anything else by
    its type: its ``repr`` is the caller's code)."""
    global _last_checked
    values = _read(limits)
    last = _last_checked
    if last[0] is limits and all(map(is_, last[1], values)):  # the same object holding the same values
        return last[2]
    for name, value in zip(_NAMES, values):
        if type(value) is not int:
            raise ValueError(f"Limits.{name} must be a positive int, not {type(value).__name__}")
        if value < 1:
            raise ValueError(f"Limits.{name} must be a positive int, not {value!r}")
    if values[_DEPTH] > MAX_DEPTH_CEILING:
        raise ValueError(f"Limits.max_depth may not exceed {MAX_DEPTH_CEILING}")
    if values[_NUMBER_LENGTH] > 10_000:
        raise ValueError("Limits.max_number_length may not exceed 10000")
    result = limits if type(limits) is Limits else Limits(**dict(zip(_NAMES, values)))
    _last_checked = (limits, values, result)
    return result


#: the last ``(limits, values read, result)`` of :func:`checked`
_last_checked: tuple[object, tuple[object, ...], Limits] = (None, (), DEFAULT_LIMITS)

#: The fields the native core neither reads nor holds: they bound work done in
#: Python only (the core's copy of the limits has every other field).
PYTHON_ONLY: Final = frozenset({"max_result_bytes", "max_result_effects"})


def seconds(what: str, value: object, *, zero: bool = False, unit: str = "seconds") -> float:
    """``value`` as a duration in seconds: an int or float (not a bool), finite,
    and above zero (or at least zero when ``zero``). An infinite lease would
    never expire and a NaN one compares false to every clock, so both are
    refused here rather than stored. A wrong type is a ``TypeError``, a wrong
    value a ``ValueError``."""
    if type(value) is bool or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of {unit}, not {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond any float
        raise ValueError(f"{what} must be a finite number of {unit}, not {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{what} must be a finite number of {unit}, not {value!r}")
    if number < 0 or (number == 0 and not zero):
        raise ValueError(f"{what} must be {'at least zero' if zero else 'positive'}, not {value!r}")
    return number


def count(what: str, value: object, *, minimum: int = 1) -> int:
    """``value`` as a count (of characters, of attempts): an int, not a bool,
    at least ``minimum``. A float is a ``TypeError`` (a NaN or an infinity
    would compare false, or true, to every length and turn the bound off),
    a smaller int a ``ValueError``."""
    if type(value) is not int:
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{what} must be at least {minimum}")
    return value
