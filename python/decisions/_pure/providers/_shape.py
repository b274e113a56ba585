"""Payload-shape readers shared by the Anthropic and Gemini mappers.

Each accepts what the Rust mapper's serde structs accept (a missing key or
null for an optional field, exactly the documented JSON type otherwise) and
raises ``MALFORMED_EVENT`` with ``"<provider> <what> does not have the
documented shape"``, the message the Rust mappers give.
``shape(provider)`` builds the set once per mapper module, so a call costs no
more than a module-level function.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from ...errors import new_error

__all__ = ["Shape", "shape", "U64_MAX"]

#: the largest token count or index (u64 in the Rust twin)
U64_MAX = 0xFFFF_FFFF_FFFF_FFFF


class Shape(NamedTuple):
    """The readers of one provider; see ``shape``."""

    malformed: Callable[[str], Exception]
    obj: Callable[[Any, str], dict[str, Any]]
    opt_obj: Callable[[dict[str, Any], str, str], "dict[str, Any] | None"]
    opt_list: Callable[[dict[str, Any], str, str], "list[Any] | None"]
    opt_str: Callable[[dict[str, Any], str, str], "str | None"]
    req_str: Callable[[dict[str, Any], str, str], str]
    opt_bool: Callable[[dict[str, Any], str, str], bool]
    req_index: Callable[[dict[str, Any], str], int]
    opt_count: Callable[[dict[str, Any], str, str], "int | None"]


def shape(provider: str) -> Shape:
    """The shape readers whose errors name ``provider``."""

    def malformed(what: str) -> Exception:
        return new_error("MALFORMED_EVENT", f"{provider} {what} does not have the documented shape")

    def obj(value: Any, what: str) -> dict[str, Any]:
        if type(value) is not dict:
            raise malformed(what)
        return value

    def opt_obj(d: dict[str, Any], key: str, what: str) -> dict[str, Any] | None:
        value = d.get(key)
        return None if value is None else obj(value, what)

    def opt_list(d: dict[str, Any], key: str, what: str) -> list[Any] | None:
        value = d.get(key)
        if value is not None and type(value) is not list:
            raise malformed(what)
        return value

    def opt_str(d: dict[str, Any], key: str, what: str) -> str | None:
        value = d.get(key)
        if value is not None and type(value) is not str:
            raise malformed(what)
        return value

    def req_str(d: dict[str, Any], key: str, what: str) -> str:
        value = d.get(key)
        if type(value) is not str:
            raise malformed(what)
        return value

    def opt_bool(d: dict[str, Any], key: str, what: str) -> bool:
        """An optional boolean, absent or null reading as ``False``."""
        value = d.get(key)
        if value is not None and type(value) is not bool:
            raise malformed(what)
        return bool(value)

    def req_index(d: dict[str, Any], what: str) -> int:
        """The required ``index`` field: an integer in ``0..=u64::MAX``."""
        value = d.get("index")
        if type(value) is not int or value < 0 or value > U64_MAX:
            raise malformed(what)
        return value

    def opt_count(d: dict[str, Any], key: str, what: str) -> int | None:
        """An optional integer in ``0..=u64::MAX``."""
        value = d.get(key)
        if value is not None and (type(value) is not int or value < 0 or value > U64_MAX):
            raise malformed(what)
        return value

    return Shape(malformed, obj, opt_obj, opt_list, opt_str, req_str, opt_bool, req_index, opt_count)
