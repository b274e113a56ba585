"""Payload-shape readers shared by every mapper (the template: see the
docstring of this package).

Each accepts what the Rust mapper's shape readers accept (a missing key or
null for an optional field, exactly the documented JSON type otherwise) and
raises ``MALFORMED_EVENT`` with ``"<provider> <what> does not have the
documented shape"`` and the JSON path of the field in the event
(``$.choices[0].delta.content``, the path syntax of the envelope rule's
errors): the code, message and path the Rust mappers give. A reader is given
the path of the object it reads from (``at``) and the key; the field's path
is written only when an error names it. ``shape(provider)`` builds the set
once per mapper module, so a call costs no more than a module-level function.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from ...errors import OutputError, new_error

__all__ = ["Shape", "shape", "located", "model_role", "U64_MAX"]

#: the largest token count or index (u64 in the Rust twin)
U64_MAX = 0xFFFF_FFFF_FFFF_FFFF


def located(code: str, message: str, path: str) -> OutputError:
    """The error ``code`` with ``message`` about the field at ``path``."""
    return new_error(code, message, path=path)


def model_role(d: dict[str, Any], model: str, what: str, at: str) -> None:
    """Refuse a message whose ``role`` (in ``d``, at ``at``) is present, not
    null and not ``model``, the model's role for the provider: another
    party's message (``user``, ``tool``, ``system``, ...) is never the
    model's answer, so nothing in it is decided. ``MALFORMED_EVENT`` at
    ``{at}.role``."""
    role = d.get("role")
    if role is None or role == model:
        return
    if type(role) is str:
        detail = f'a message of role "{role}" is not the model\'s answer'
    else:
        detail = "a message whose role is not a string is not the model's answer"
    raise located("MALFORMED_EVENT", f"{what}: {detail}", f"{at}.role")


class Shape(NamedTuple):
    """The readers of one provider; see ``shape``."""

    malformed: Callable[[str, str], OutputError]
    obj: Callable[[Any, str, str], dict[str, Any]]
    opt_obj: Callable[[dict[str, Any], str, str, str], "dict[str, Any] | None"]
    opt_list: Callable[[dict[str, Any], str, str, str], "list[Any] | None"]
    opt_str: Callable[[dict[str, Any], str, str, str], "str | None"]
    req_str: Callable[[dict[str, Any], str, str, str], str]
    opt_bool: Callable[[dict[str, Any], str, str, str], bool]
    req_index: Callable[[dict[str, Any], str, str], int]
    opt_count: Callable[[dict[str, Any], str, str, str], "int | None"]


def shape(provider: str) -> Shape:
    """The shape readers whose errors name ``provider``."""

    def malformed(what: str, path: str) -> OutputError:
        """The error for the field at ``path`` of a ``what`` that does not fit."""
        return new_error("MALFORMED_EVENT", f"{provider} {what} does not have the documented shape", path=path)

    def obj(value: Any, what: str, path: str) -> dict[str, Any]:
        """The object at ``path``."""
        if type(value) is not dict:
            raise malformed(what, path)
        return value

    def opt_obj(d: dict[str, Any], key: str, what: str, at: str) -> dict[str, Any] | None:
        value = d.get(key)
        if value is not None and type(value) is not dict:
            raise malformed(what, f"{at}.{key}")
        return value

    def opt_list(d: dict[str, Any], key: str, what: str, at: str) -> list[Any] | None:
        value = d.get(key)
        if value is not None and type(value) is not list:
            raise malformed(what, f"{at}.{key}")
        return value

    def opt_str(d: dict[str, Any], key: str, what: str, at: str) -> str | None:
        value = d.get(key)
        if value is not None and type(value) is not str:
            raise malformed(what, f"{at}.{key}")
        return value

    def req_str(d: dict[str, Any], key: str, what: str, at: str) -> str:
        value = d.get(key)
        if type(value) is not str:
            raise malformed(what, f"{at}.{key}")
        return value

    def opt_bool(d: dict[str, Any], key: str, what: str, at: str) -> bool:
        """An optional boolean, absent or null reading as ``False``."""
        value = d.get(key)
        if value is not None and type(value) is not bool:
            raise malformed(what, f"{at}.{key}")
        return bool(value)

    def req_index(d: dict[str, Any], what: str, at: str) -> int:
        """The required ``index`` field: an integer in ``0..=u64::MAX``."""
        value = d.get("index")
        if type(value) is not int or value < 0 or value > U64_MAX:
            raise malformed(what, f"{at}.index")
        return value

    def opt_count(d: dict[str, Any], key: str, what: str, at: str) -> int | None:
        """An optional integer in ``0..=u64::MAX``."""
        value = d.get(key)
        if value is not None and (type(value) is not int or value < 0 or value > U64_MAX):
            raise malformed(what, f"{at}.{key}")
        return value

    return Shape(malformed, obj, opt_obj, opt_list, opt_str, req_str, opt_bool, req_index, opt_count)
