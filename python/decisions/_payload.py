"""JSON text of Python values, at any depth, with one writer for the package.

:func:`dumps` is ``json.dumps(value, ensure_ascii=False, allow_nan=False)``
(with ``sort_keys`` and ``separators`` as asked) for values of any depth:
``json.dumps`` recurses once per level, so a value nested deeper than
:data:`_RECURSION_SAFE_DEPTH` (measured first, without recursion) is written
by an explicit-stack writer that gives the same text. :func:`canonical_json`
is the sorted, compact form used for digests and for arguments a provider
sent as an object. :func:`strict_loads` reads such text back at any depth
(``json.loads``, and past its recursion an explicit-stack reader that leaves
every scalar and key to ``json``). :func:`payload_text` is the text of a
payload handed over as Python objects (``feed_event(dict)``,
``normalize(dict)``): both backends write it here and apply the envelope rule
to the text, so a dict and the same JSON text give the same outcome; a
payload whose text would pass the size limit is told before it is written.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final, overload

from .errors import new_error

__all__ = ["canonical_json", "dumps", "payload_text", "plain_json", "strict_loads"]

#: ``json.dumps`` is used for values at most this deep.
_RECURSION_SAFE_DEPTH: Final = 200


def _deeper_than(value: Any, bound: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > bound:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list, tuple)))
    return False


@overload
def _write(value: Any, sort_keys: bool, separators: tuple[str, str]) -> str: ...
@overload
def _write(value: Any, sort_keys: bool, separators: tuple[str, str], limit: int) -> str | None: ...
def _write(value: Any, sort_keys: bool, separators: tuple[str, str], limit: int | None = None) -> str | None:
    """``json.dumps`` of ``value`` with an explicit stack; with ``limit``,
    None as soon as the text written has more than ``limit`` characters (so
    more than ``limit`` bytes of UTF-8)."""
    item_sep, key_sep = separators
    out: list[str] = []
    written = counted = 0  # the characters of out[:counted]
    # per open container: its id, an iterator of (separator, key or None, child), its closer
    frames: list[tuple[int, Any, str]] = [(0, iter([("", None, value)]), "")]
    open_ids: set[int] = set()
    while frames:
        ident, entries, closer = frames[-1]
        entry = next(entries, None)
        if entry is None:
            frames.pop()
            open_ids.discard(ident)
            out.append(closer)
            continue
        separator, key, child = entry
        if limit is not None:
            while counted < len(out):
                written += len(out[counted])
                counted += 1
            if written > limit:
                return None
        out.append(separator)
        if key is not None:
            if not isinstance(key, str):
                raise TypeError(f"keys must be str, not {type(key).__name__}")
            out.append(json.dumps(key, ensure_ascii=False) + key_sep)
        if isinstance(child, (dict, list, tuple)):
            if id(child) in open_ids:
                raise ValueError("Circular reference detected")
            open_ids.add(id(child))
            if isinstance(child, dict):  # its members, never a subclass's items()
                members = sorted(dict.items(child)) if sort_keys else dict.items(child)
                out.append("{")
                frames.append((id(child), ((item_sep if i else "", k, v) for i, (k, v) in enumerate(members)), "}"))
            else:
                out.append("[")
                frames.append((id(child), ((item_sep if i else "", None, v) for i, v in enumerate(child)), "]"))
        else:
            out.append(json.dumps(child, ensure_ascii=False, allow_nan=False))
    return "".join(out)


def dumps(value: Any, *, sort_keys: bool = False, separators: tuple[str, str] = (", ", ": ")) -> str:
    """``json.dumps(value, ensure_ascii=False, allow_nan=False, ...)`` at any depth."""
    if _deeper_than(value, _RECURSION_SAFE_DEPTH):
        return _write(value, sort_keys, separators)
    return json.dumps(value, ensure_ascii=False, allow_nan=False, sort_keys=sort_keys, separators=separators)


def strict_dumps(value: Any, *, sort_keys: bool = False, separators: tuple[str, str] = (", ", ": ")) -> str:
    """:func:`dumps`, and TypeError for an object key that is not a string at
    any depth (``json`` would write ``{1: ..}`` as ``{"1": ..}``, beside a
    ``"1"`` key too)."""
    stack: list[Any] = [value]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if isinstance(node, (dict, list, tuple)):
            if id(node) in seen:
                continue  # a cycle: dumps refuses it
            seen.add(id(node))
            if isinstance(node, dict):
                if not all(isinstance(k, str) for k in node):
                    raise TypeError("object keys must be str")
                stack.extend(node.values())
            else:
                stack.extend(node)
    return dumps(value, sort_keys=sort_keys, separators=separators)


def _plain_scalar(value: Any) -> Any:
    """The plain JSON scalar ``value`` holds (a str, int or float subclass
    read as its content, never through its own methods); TypeError or
    ValueError when it is none."""
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__int__(value)
    if isinstance(value, float):
        number = float.__float__(value)
        if not math.isfinite(number):
            raise ValueError(f"{number!r} is not JSON")
        return number
    raise TypeError(f"a {type(value).__name__} is not JSON")


def plain_json(value: Any) -> Any:
    """A deep copy of ``value`` made of exact ``dict``, ``list``, ``str``,
    ``int``, ``float``, ``bool`` and None, read once: a dict (of any class)
    as the members it holds and any other mapping by its ``items()``, a list
    or tuple as the entries it holds, a str, int or float subclass as its
    content (so no method of the caller's class decides what is read, and a
    later change to ``value`` is not seen). Keys and their order are kept.
    TypeError for a key that is not a str or a value that is not JSON,
    ValueError for NaN, an infinity, a key held twice or a cycle; any depth (no recursion)."""
    root: list[Any] = [None]
    # each entry: the copy to fill, the index or key to fill in it, the value to copy there
    stack: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    open_ids: set[int] = set()
    while stack:
        target, slot, item = stack.pop()
        if item is _CLOSE:
            open_ids.discard(slot)
            continue
        if isinstance(item, (Mapping, list, tuple)):
            if id(item) in open_ids:
                raise ValueError("Circular reference detected")
            if isinstance(item, dict):
                members: Any = list(dict.items(item))
            elif isinstance(item, Mapping):
                members = list(item.items())
            else:
                members = list(list.__iter__(item) if isinstance(item, list) else tuple.__iter__(item))
            copy: Any
            entries: list[tuple[Any, Any]]
            if isinstance(item, Mapping):
                copy = {}
                for key, _ in members:
                    if not isinstance(key, str):
                        raise TypeError(f"keys must be str, not {type(key).__name__}")
                    if str.__str__(key) in copy:  # two keys of a str subclass that spell one
                        raise ValueError(f"the key {str.__str__(key)!r} is repeated")
                    copy[str.__str__(key)] = None
                entries = [(str.__str__(key), child) for key, child in members]
            else:
                copy = [None] * len(members)
                entries = list(enumerate(members))
            target[slot] = copy
            open_ids.add(id(item))
            stack.append((None, id(item), _CLOSE))
            stack.extend((copy, at, child) for at, child in reversed(entries))
        else:
            target[slot] = _plain_scalar(item)
    return root[0]


#: Marks where a container's entries end in :func:`plain_json`'s stack.
_CLOSE: Final = object()


def canonical_json(value: Any) -> str:
    """Keys sorted, no whitespace, non-ASCII kept, floats as ``repr``; any depth."""
    return dumps(value, sort_keys=True, separators=(",", ":"))


def _over(value: Any, limit: int) -> tuple[bool | None, bool]:
    """Whether a lower bound of the length of the JSON text :func:`dumps`
    writes for ``value`` passes ``limit`` (a string its characters and
    quotes, any other scalar one character, a container its brackets and
    separators), by a walk that stops once it does (so it visits at most
    about ``limit`` values); None, the walk given up, once a container sits
    deeper than :data:`_RECURSION_SAFE_DEPTH` (a cycle does: the explicit
    writer refuses it). Beside it, whether each dict the walk met is a
    plain ``dict``: ``json`` reads a subclass through its ``items()``, which
    may show other members than it holds (a dict is read as its members,
    here as elsewhere, never through its class's methods)."""
    if isinstance(value, str):
        return len(value) + 2 > limit, True
    total = 2  # a container's brackets are counted when it is met
    plain = True
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > _RECURSION_SAFE_DEPTH:
            return None, plain
        children: Any
        if isinstance(item, dict):
            plain = plain and type(item) is dict
            total += 6 * dict.__len__(item) - 2 if item else 0  # each key's quotes and ": "; ", " between members
            for key in dict.keys(item):
                if isinstance(key, str):
                    total += len(key)
            children = dict.values(item)
        elif isinstance(item, (list, tuple)):
            total += 2 * len(item) - 2 if item else 0  # ", " between entries
            children = item
        else:
            return 1 > limit, plain  # a scalar payload
        for child in children:
            if isinstance(child, str):
                total += len(child) + 2
            elif isinstance(child, (dict, list, tuple)):
                total += 2
                if total > limit:
                    return True, plain
                stack.append((child, depth + 1))
            else:
                total += 1
        if total > limit:
            return True, plain
    return False, plain


#: a lone surrogate: a str holding one has no UTF-8 form
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _surrogate(value: Any) -> str | None:
    """The first lone surrogate found in a string of ``value`` (a key or a
    value), or None; a container met again is not walked again."""
    seen: set[int] = set()
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            found = None if node.isascii() else _SURROGATE.search(node)
            if found is not None:
                return found.group()
        elif isinstance(node, (dict, list, tuple)) and id(node) not in seen:
            seen.add(id(node))
            if isinstance(node, dict):  # its members, never a subclass's methods
                stack.extend(dict.keys(node))
                stack.extend(dict.values(node))
            else:
                stack.extend(node)
    return None


def payload_text(value: Any, limit: int | None = None) -> str | None:
    """The JSON text of a dict or list payload; ``MALFORMED_EVENT`` when it is
    not JSON (a non-str key, NaN, a cycle, an object ``json`` cannot write).
    With ``limit``: None, before it is written whole, for a payload whose
    text would have more than ``limit`` bytes (told by a lower bound of its
    length, or as the explicit writer goes; a text within the bound is left
    to the caller's size check), whatever else is wrong with it, but for a
    lone surrogate in one of its strings: the UTF-8 check comes first, as for
    text, so the surrogate alone is given as the text, which the caller
    refuses as not UTF-8."""
    try:
        if limit is None:
            return dumps(value)
        over, plain = _over(value, limit)
        if over:
            return _surrogate(value)
        if over is None:
            return _write(value, False, (", ", ": "), limit)
        return json.dumps(value if plain else plain_json(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        raise new_error("MALFORMED_EVENT", "event payload is not JSON-serialisable") from None


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _skip(text: str, at: int) -> int:
    """The position of the first character from ``at`` that is not JSON whitespace."""
    while text[at : at + 1] in (" ", "\t", "\n", "\r"):
        at += 1
    return at


def _key(decode: Any, text: str, at: int) -> tuple[str, int]:
    """The object key at ``at`` and where its value starts (after the colon)."""
    if not text.startswith('"', at):
        raise ValueError(f"expected a key at {at}")
    key, end = decode(text, at)
    end = _skip(text, end)
    if not text.startswith(":", end):
        raise ValueError(f"expected ':' at {end}")
    return key, _skip(text, end + 1)


def _read(text: str) -> Any:
    """``json.loads`` of ``text`` with an explicit stack: containers are opened
    and closed here, every scalar and key is read by ``json`` itself."""
    decode = json.JSONDecoder(parse_constant=_no_constant).raw_decode
    stack: list[tuple[Any, str | None]] = []  # each open container and, in an object, the key being read
    at = _skip(text, 0)
    value: Any
    while True:
        opener = text[at : at + 1]
        if opener in ("[", "{"):
            at = _skip(text, at + 1)
            if text.startswith("]" if opener == "[" else "}", at):
                value, at = ([] if opener == "[" else {}), at + 1
            else:
                key = None
                if opener == "{":
                    key, at = _key(decode, text, at)
                stack.append(([] if opener == "[" else {}, key))
                continue
        else:
            value, at = decode(text, at)
        while True:  # the value goes into its container; every container that ends here is closed
            at = _skip(text, at)
            if not stack:
                if at != len(text):
                    raise ValueError(f"extra data at {at}")
                return value
            container, key = stack[-1]
            if key is None:
                container.append(value)
            else:
                container[key] = value
            mark = text[at : at + 1]
            if mark == ",":
                at = _skip(text, at + 1)
                if key is not None:
                    key, at = _key(decode, text, at)
                    stack[-1] = (container, key)
                break
            if mark != ("]" if key is None else "}"):
                raise ValueError(f"expected ',' or a closing bracket at {at}")
            value, at = stack.pop()[0], at + 1


def strict_loads(text: str) -> Any:
    """``json.loads(text)`` at any depth, refusing NaN and Infinity
    (ValueError): the reader of what :func:`dumps` writes. ``json.loads``
    recurses once per level, so text it cannot nest that deep is read again
    with an explicit stack."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        return _read(text)
