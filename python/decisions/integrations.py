"""Working with what users already have: SDK objects and httpx responses.

SDK objects (``openai``, ``anthropic``, ``google-genai``) are pydantic models;
:func:`to_payload` turns one back into the provider's wire shape (API field
names, no fields the API did not send), so ``StreamAssembler.feed_event`` and
``normalize`` see exactly what the raw stream would have carried. The SDKs are
never imported here: objects are recognised by their module and methods.

httpx helpers (for ``httpx`` and its successor ``httpx2``, which the current
openai and anthropic SDKs use) read a streaming response (``client.stream(...)``)
as canonical events, then give the :class:`~decisions.types.NormalizedResponse`. A dropped
connection ends in :class:`~decisions.TransportError` ``CONNECTION_CLOSED``, a
body that stops before the provider's terminal event in
:class:`~decisions.StreamError` ``NO_TERMINAL_EVENT``: never a half answer.
A body that is no event stream (told by its first bytes, whatever its
content type) is refused once read: a JSON error body as the
``PROVIDER_ERROR`` it is when given to ``normalize``, anything else as
``NOT_A_RESPONSE_BODY`` (Gemini's JSON array of chunks, its stream without
``alt=sse``, is a stream).
"""

from __future__ import annotations as _annotations

import base64 as _base64
import importlib as _importlib
import itertools as _itertools
import json as _json
import math as _math
from collections.abc import AsyncIterator as _AsyncIterator
from collections.abc import Iterable as _Iterable
from collections.abc import Iterator as _Iterator
from collections.abc import Mapping as _Mapping
from contextlib import aclosing as _aclosing
from types import ModuleType as _ModuleType
from typing import Any as _Any
from typing import Final as _Final

from pydantic_core import PydanticSerializationError as _SerializationError

from . import _backend
from .detect import AUTO as _AUTO
from .detect import AutoAssembler as _AutoAssembler
from .detect import candidates as _candidates
from .errors import OutputError as _OutputError
from .errors import StreamError as _StreamError
from .errors import TransportError as _TransportError
from .limits import DEFAULT_LIMITS as _DEFAULT_LIMITS
from .limits import Limits as _Limits
from .providers import ANTHROPIC as _ANTHROPIC
from .providers import GEMINI as _GEMINI
from .providers import OPENAI_RESPONSES as _OPENAI_RESPONSES
from .types import CanonicalEvent as _CanonicalEvent
from .types import NormalizedResponse as _NormalizedResponse

__all__ = [
    "to_payload",
    "detect_provider",
    "feed_sdk_event",
    "assemble_sdk_stream",
    "normalize_sdk",
    "HttpxEventStream",
    "AsyncHttpxEventStream",
    "stream_httpx",
    "astream_httpx",
]

#: The SDK packages whose objects are recognised, by top-level module.
_SDK_ROOTS: _Final = ("openai", "anthropic", "google.genai")
#: The HTTP client packages whose responses and errors are read.
_HTTP_ROOTS: _Final = ("httpx", "httpx2")


def _module_name(cls: type) -> str:
    """The module a class says it is defined in ("" where it says none, or not as a str)."""
    module = getattr(cls, "__module__", None)
    return module if isinstance(module, str) else ""


def _nearest(obj: object, roots: _Iterable[str]) -> tuple[type, str] | None:
    """The nearest class of ``obj`` (its own, else the nearest it derives
    from) that one of ``roots`` (packages) defines, and that root: a
    caller's subclass of an SDK type is that type's object."""
    for cls in type(obj).__mro__:
        module = _module_name(cls)
        for root in roots:
            if module == root or module.startswith(root + "."):
                return cls, root
    return None


def _sdk_of(obj: object) -> str | None:
    found = _nearest(obj, _SDK_ROOTS)
    return None if found is None else found[1]


def _wire_fields(obj: _Any) -> set[str] | None:
    """For an SDK helper object (see :func:`_helper`), the API names of the
    fields its nearest wire type declares; None for a wire type."""
    found = _nearest(obj, _SDK_ROOTS)
    if found is None or not _helper(obj):
        return None
    sdk_class, root = found
    for cls in sdk_class.__mro__[1:]:
        if _module_name(cls).startswith(f"{root}.types") and hasattr(cls, "model_fields"):
            return {field.alias or name for name, field in cls.model_fields.items()}
    return set()


def _helper(obj: object) -> bool:
    """Whether ``obj`` is an SDK helper-stream object (its nearest SDK class
    defined outside ``<sdk>.types``), not a wire type. Only a helper's
    ``type`` says what it is: a wire type's ``type`` may be a field the
    server made up (the SDKs keep unknown fields), and is the mapper's to
    read."""
    found = _nearest(obj, _SDK_ROOTS)
    return found is not None and not _module_name(found[0]).startswith(f"{found[1]}.types")


#: The OpenAI SDK's type packages, and the API whose objects they hold.
_OPENAI_APIS: _Final = (("openai.types.chat", "openai-chat"), ("openai.types.responses", "openai-responses"))


def _openai_api(obj: object) -> str | None:
    """The API an OpenAI SDK object belongs to, told by its class (or the
    nearest wire class it derives from), never by its fields."""
    for cls in type(obj).__mro__:
        module = _module_name(cls)
        for package, provider in _OPENAI_APIS:
            if module == package or module.startswith(package + "."):
                return provider
    return None


#: URL-safe base64 to standard: the same text but for these two characters.
_STANDARD_ALPHABET: _Final = str.maketrans("-_", "+/")


def _scan_dump(raw: _Any) -> list[tuple[list[tuple[int, int]], bytes]]:
    """The places in ``raw`` (a python-mode dump) that hold bytes: from the
    root to each, the position of each member or entry on the way and the
    size of its container (a dump's JSON mode keeps both, but may write a
    key otherwise: ``1`` as ``"1"``), and the bytes. A tuple is walked as
    the list its JSON dump writes. ``MALFORMED_EVENT``, as for the same
    payload given as a dict, for a float that is no JSON number (NaN or an
    infinity, which JSON mode writes as null where the SDK read one with
    ``json``) and for a container inside itself (a cycle, which a
    python-mode dump keeps where the object holds one)."""
    found: list[tuple[list[tuple[int, int]], bytes]] = []
    stack: list[tuple[list[tuple[int, int]] | None, _Any]] = [([], raw)]
    open_ids: set[int] = set()
    while stack:
        steps, node = stack.pop()
        if steps is None:  # the walk of the container with this id is done
            open_ids.discard(node)
            continue
        values = list(dict.values(node)) if isinstance(node, dict) else list(node)  # a dict's members, as written
        if id(node) in open_ids:
            raise _unwritable()
        open_ids.add(id(node))
        stack.append((None, id(node)))
        for at, value in enumerate(values):
            if isinstance(value, bytes):
                found.append(([*steps, (at, len(values))], value))
            elif isinstance(value, (dict, list, tuple)):
                stack.append(([*steps, (at, len(values))], value))
            elif isinstance(value, float) and not _math.isfinite(value):
                raise _unwritable()
    return found


def _place(data: _Any, steps: list[tuple[int, int]]) -> tuple[_Any, _Any]:
    """The container and key (or index) in ``data``, a JSON dump, of the
    place :func:`_scan_dump` gives by ``steps``; ``MALFORMED_EVENT``
    where the JSON dump has no such place (two keys it writes alike, as
    ``1`` and ``"1"``, which the same payload's text repeats)."""
    target: _Any = None
    key: _Any = None
    for step, (at, size) in enumerate(steps):
        node = data if step == 0 else target[key]
        if isinstance(node, dict) and dict.__len__(node) == size:
            target, key = node, next(_itertools.islice(dict.keys(node), at, None))
        elif isinstance(node, list) and len(node) == size:
            target, key = node, at
        else:
            raise _unwritable()
    return target, key


def _unwritable(error: BaseException | None = None) -> _StreamError:
    """The ``MALFORMED_EVENT`` of an SDK object whose payload cannot be
    written as JSON (as for the same payload given as a dict), or whose
    ``model_dump`` failed or gave no dict (``error``: what it raised)."""
    if error is None:
        return _StreamError("MALFORMED_EVENT", "event payload is not JSON-serialisable")
    return _StreamError("MALFORMED_EVENT", f"event payload is not JSON-serialisable ({type(error).__name__}: {error})")


def _genai_payload(dump: _Any, limits: _Limits | None) -> dict[str, _Any]:
    """A google-genai object's wire payload. It sets every field (None when
    absent) and names them in snake case; its JSON mode writes bytes (inline
    data, thought signatures) as URL-safe base64, where the API sends
    standard base64. The python-mode dump (which shares the object's bytes)
    says where bytes are and how long: with ``limits``, a payload whose
    base64 alone is longer than ``max_sse_event_bytes`` is refused as the
    payload itself would be, before it is written; otherwise each URL-safe
    text is turned into standard base64 where it lies."""
    fields = _scan_dump(_python_dump(dump, exclude_none=True))
    if limits is not None:
        encoded = sum(4 * -(-len(value) // 3) for _, value in fields)
        if encoded > limits.max_sse_event_bytes:
            raise _StreamError(
                "MALFORMED_EVENT", f"event data has more than {limits.max_sse_event_bytes} bytes", path="$"
            )
    data: dict[str, _Any] = _json_dump(dump, exclude_none=True)
    for steps, value in fields:
        target, key = _place(data, steps)
        text = target[key]
        head = _base64.urlsafe_b64encode(value[:3]).decode("ascii")
        if isinstance(text, str) and len(text) == 4 * -(-len(value) // 3) and text.startswith(head):
            target[key] = text.translate(_STANDARD_ALPHABET)
        else:  # not written as base64 by this SDK version
            target[key] = _base64.b64encode(value).decode("ascii")
    return data


def _json_dump(dump: _Any, **fields: bool) -> dict[str, _Any]:
    """``dump`` (a pydantic object's ``model_dump``) in JSON mode; where the
    object holds a value JSON mode cannot write (a field set by hand to an
    object of another type), its python-mode dump, which the payload's
    reader refuses as it refuses such a dict (``MALFORMED_EVENT``: not
    JSON-serialisable), never pydantic's own exception. A dump that fails
    otherwise with a ``TypeError`` or ``ValueError`` (a cycle, nesting past
    pydantic's depth), as the payload's writer refuses a dict that raises
    them, or gives no dict is ``MALFORMED_EVENT``; any other exception of a
    caller's ``model_dump`` is its own, and propagates."""
    try:
        data = dump(mode="json", by_alias=True, **fields)
    except _SerializationError:
        return _python_dump(dump, **fields)
    except (TypeError, ValueError) as error:
        raise _unwritable(error) from error
    return _checked_dump(data)


def _python_dump(dump: _Any, **fields: bool) -> dict[str, _Any]:
    """``dump`` in python mode, by alias; ``MALFORMED_EVENT`` as in :func:`_json_dump`."""
    try:
        data = dump(mode="python", by_alias=True, **fields)
    except (TypeError, ValueError) as error:
        raise _unwritable(error) from error
    return _checked_dump(data)


def _checked_dump(data: object) -> dict[str, _Any]:
    """A dump that is a dict; ``MALFORMED_EVENT`` for anything else (a
    ``model_dump`` giving None would drop the event, text would be read as
    the JSON it spells)."""
    if not isinstance(data, dict):
        raise _unwritable(TypeError(f"model_dump gave {type(data).__name__}, not a dict"))
    return data


def to_payload(obj: _Any, *, limits: _Limits | None = None) -> dict[str, _Any] | str | bytes | None:
    """The provider's wire payload for one SDK object, dict, JSON text or bytes.

    Returns None for an event an SDK helper stream synthesises from the wire
    events (``text``, ``input_json``, ``content.delta``, ``compaction``, ...:
    a helper event no wire type underlies): it carries nothing the wire
    events, which the helper stream gives too, did not. A helper's ``chunk``
    event gives its chunk.
    With ``limits``, a google-genai object whose bytes (inline data) alone
    make its payload longer than ``max_sse_event_bytes`` is refused before
    it is written out, with the ``MALFORMED_EVENT`` the payload would get.
    """
    if isinstance(obj, (str, bytes, bytearray, memoryview)):
        return bytes(obj) if isinstance(obj, (bytearray, memoryview)) else obj
    if isinstance(obj, dict):  # its members, as the assembler reads it, never a subclass's methods
        return dict(dict.items(obj))
    if isinstance(obj, _Mapping):
        return dict(obj)
    event_type = getattr(obj, "type", None)
    if isinstance(event_type, str) and _sdk_of(obj) in ("openai", "anthropic") and _helper(obj):
        if event_type == "chunk" and hasattr(obj, "chunk"):
            if obj.chunk is None:  # a helper object without its wire chunk: nothing to read, nothing to skip
                raise _unwritable(TypeError("the chunk event holds no chunk"))
            return to_payload(obj.chunk, limits=limits)
        if not _wire_fields(obj):
            return None
    dump = getattr(obj, "model_dump", None)
    if not callable(dump):
        raise TypeError(f"cannot read a provider payload from {type(obj).__name__}: not a dict, text or pydantic model")
    if _sdk_of(obj) == "google.genai":
        data = _genai_payload(dump, limits)
    else:
        _scan_dump(_python_dump(dump, exclude_unset=True))  # refuses what JSON mode would write otherwise
        data = _json_dump(dump, exclude_unset=True)
    keep = _wire_fields(obj)
    if keep is not None:
        data = {key: value for key, value in data.items() if key in keep}
    return data


def detect_provider(obj: _Any) -> str | None:
    """The provider id for an SDK object or a decoded wire payload (an event
    or a whole body), or None when it cannot tell. An SDK object is told by
    its class where that names the API (the caller's own type, not fields
    the server sent); a payload by its shape, and only when that is one
    provider's."""
    root = _sdk_of(obj)
    if root == "google.genai":
        return "gemini"
    if root == "anthropic":
        return "anthropic"
    if root == "openai":
        if _helper(obj) and getattr(obj, "type", None) == "chunk" and hasattr(obj, "chunk"):
            return detect_provider(obj.chunk)
        api = _openai_api(obj)
        if api is not None:
            return api
    try:
        payload: _Any = obj if isinstance(obj, _Mapping) else to_payload(obj)
        if isinstance(payload, (str, bytes)):
            payload = _json.loads(payload)
    except (TypeError, ValueError, RecursionError, _OutputError):
        # text nested past the interpreter's recursion limit tells nothing
        # either (with a provider given, the envelope rule refuses it), nor
        # does an object whose payload cannot be read
        return None
    if not isinstance(payload, _Mapping):
        return None
    found = _candidates(payload, stream=False)
    return found[0] if len(found) == 1 else None


def feed_sdk_event(assembler: _Any, obj: _Any) -> None:
    """Feed one SDK stream event (or a dict / JSON text) to ``assembler``.
    Helper-stream events that repeat wire data are skipped. The first SDK
    object fed to ``StreamAssembler()`` (provider ``"auto"``) names the
    provider by its class, as in :func:`assemble_sdk_stream`, not by its
    fields. An event whose payload cannot be read (``MALFORMED_EVENT``) ends
    the stream: the assembler is aborted, as no later event can make up for it."""
    try:
        payload = to_payload(obj)
    except _OutputError:
        assembler.abort()
        raise
    if payload is None:
        return
    if isinstance(assembler, _AutoAssembler) and assembler.provider == _AUTO and _sdk_of(obj) is not None:
        told = detect_provider(obj)
        if told is not None:
            assembler._told(told)
    assembler.feed_event(payload)


def assemble_sdk_stream(
    events: _Iterable[_Any],
    *,
    provider: str | None = None,
    limits: _Limits | None = None,
    choice: int | None = None,
) -> _NormalizedResponse:
    """Assemble a whole SDK stream (``client.chat.completions.create(stream=True)``,
    ``client.messages.create(stream=True)``, ``generate_content_stream``...).
    The provider is detected from the first event unless given. What the SDK
    raises while the stream is read is a typed error (see :func:`_stream_failure`):
    ``CONNECTION_CLOSED`` for a lost connection, the provider's ``PROVIDER_ERROR``
    for an error event it sent."""
    assembler: _Any = None
    iterator = iter(events)
    while True:
        try:
            obj = next(iterator)
        except StopIteration:
            break
        except Exception as error:
            if assembler is None:
                # before any event: the provider given, or the one the SDK that raised speaks for
                chosen = provider or _SDK_PROVIDERS.get(_sdk_of(error) or "")
                if chosen is not None:
                    assembler = _backend.impl.StreamAssembler(chosen, limits=limits, choice=choice)
            failure = _stream_failure(error, assembler)
            if failure is None:
                raise
            raise failure from error
        payload = to_payload(obj, limits=limits or _DEFAULT_LIMITS)
        if payload is None:
            continue
        if assembler is None:
            chosen = provider or detect_provider(obj) or detect_provider(payload)
            if chosen is None:
                raise ValueError(f"cannot tell the provider of {type(obj).__name__}; pass provider=")
            assembler = _backend.impl.StreamAssembler(chosen, limits=limits, choice=choice)
        assembler.feed_event(payload)
    if assembler is None:
        if provider is None:
            raise ValueError("the stream is empty and no provider was given")
        assembler = _backend.impl.StreamAssembler(provider, limits=limits, choice=choice)
    response: _NormalizedResponse = assembler.finish()
    return response


#: The SDKs that speak for one provider only (the OpenAI SDK's errors do not say which API).
_SDK_PROVIDERS: _Final = {"anthropic": _ANTHROPIC, "google.genai": _GEMINI}


#: The errors the OpenAI SDK's helper streams raise at a finish reason that
#: cuts parseable output (strict tools, a Pydantic ``response_format``), and
#: the refusal the same finish is when the stream is read from its bytes.
_HELPER_FINISHES: _Final = {
    "LengthFinishReasonError": "INCOMPLETE_RESPONSE",
    "ContentFilterFinishReasonError": "CONTENT_FILTERED",
}


def _stream_failure(error: Exception, assembler: _Any) -> Exception | None:
    """The typed error for an exception an SDK stream raised while it was
    read (``assembler``: the stream's so far, None before its provider is
    known), or None for one that is not the SDK's or its HTTP client's.

    A connection that failed (the HTTP client's ``RequestError``, the SDK's
    ``APIConnectionError``) is ``CONNECTION_CLOSED``. An error the provider
    sent in the stream, which the SDK raises as its ``APIError``, is fed to
    the assembler as the wire event it came from (see :func:`_error_event`:
    its ``body``, google-genai's ``details``), so it is refused as the same
    event read from bytes is (``PROVIDER_ERROR``, retryable as the provider's
    error type says); failing that, ``PROVIDER_ERROR``.
    A helper stream's refusal of a cut-off or filtered finish is the
    ``INCOMPLETE_RESPONSE`` or ``CONTENT_FILTERED`` that finish is when read
    from the bytes. Event data the SDK could not decode as JSON (it raises the ``json``
    module's error) is ``MALFORMED_EVENT``, as the same bytes are."""
    if isinstance(error, _json.JSONDecodeError):
        return _StreamError("MALFORMED_EVENT", f"event data is not valid JSON (the SDK could not decode it: {error})")
    http = _nearest(error, _HTTP_ROOTS)
    if http is not None:
        return _dropped(error) if isinstance(error, _importlib.import_module(http[1]).RequestError) else None
    if _sdk_of(error) is None:
        return None
    names = {cls.__name__ for cls in type(error).__mro__}
    if "APIConnectionError" in names:
        return _dropped(error)
    for name, code in _HELPER_FINISHES.items():  # the helper stream stops at the finish it parses
        if name in names:
            return _StreamError(code, f"the SDK's helper stream stopped at the finish reason ({name})")
    if "APIError" not in names:
        return None
    body = getattr(error, "body", None)
    if body is None and _sdk_of(error) == "google.genai":
        body = getattr(error, "details", None)  # google-genai keeps the error chunk it raised as ``details``
    if assembler is not None and isinstance(body, _Mapping):
        event = _error_event(body, assembler.provider)
        try:
            assembler.feed_event(event)
            assembler.finish()
        except (_TransportError, _StreamError) as refused:
            return refused
    return _TransportError(
        "PROVIDER_ERROR", f"the provider sent an error in the stream ({type(error).__name__}: {error})"
    )


def _error_event(body: _Mapping[str, _Any], provider: str) -> dict[str, _Any]:
    """The wire event an SDK's error ``body`` came from: the whole event
    (Anthropic's ``{"type": "error", ...}``, a Gemini chunk's ``{"error":
    ...}``) as it is; the error object alone (the OpenAI SDK's ``body``) in
    the provider's error event, a Responses ``error`` event or a Chat chunk."""
    if body.get("type") == "error" or isinstance(body.get("error"), _Mapping):
        return dict(body)
    if provider == _OPENAI_RESPONSES:
        return {"type": "error", "error": dict(body)}
    return {"error": dict(body)}


def normalize_sdk(
    obj: _Any,
    *,
    provider: str | None = None,
    limits: _Limits | None = None,
    choice: int | None = None,
) -> _NormalizedResponse:
    """``normalize`` for a whole SDK response object (``ChatCompletion``,
    ``Response``, ``Message``, ``GenerateContentResponse``) or a dict."""
    payload = to_payload(obj, limits=limits or _DEFAULT_LIMITS)
    chosen = provider or detect_provider(obj)
    if payload is None or chosen is None:
        raise ValueError(f"cannot tell the provider of {type(obj).__name__}; pass provider=")
    response: _NormalizedResponse = _backend.impl.normalize(payload, provider=chosen, limits=limits, choice=choice)
    return response


# ---------------------------------------------------------------- httpx


def _http_module(response: _Any) -> _ModuleType:
    """``httpx`` or ``httpx2``: the package the response object comes from."""
    found = _nearest(response, _HTTP_ROOTS)
    if found is None:
        raise TypeError(f"expected an httpx or httpx2 Response, not {type(response).__name__}")
    return _importlib.import_module(found[1])


#: The bytes of an error status's body shown in its ``HTTP_STATUS`` error; no
#: more than one network chunk beyond them is read.
_ERROR_EXCERPT: _Final = 300


def _check_status(response: _Any, body: bytes) -> None:
    if response.is_success:
        return
    excerpt = body[:_ERROR_EXCERPT].decode("utf-8", "replace")
    raise _TransportError(
        "HTTP_STATUS",
        f"the provider answered HTTP {response.status_code}: {excerpt}",
        retryable=response.status_code in (408, 409, 429) or response.status_code >= 500,
    )


def _dropped(error: Exception) -> _TransportError:
    return _TransportError(
        "CONNECTION_CLOSED",
        f"the connection failed mid-stream ({type(error).__name__}: {error}); no response was produced",
    )


#: The field names an event stream's first line can start with (``b""``: a comment).
_SSE_FIELDS: _Final = frozenset({b"", b"data", b"event", b"id", b"retry"})
#: Enough of a first line to tell its field name (``retry:`` is the longest).
_SSE_HEAD: _Final = len(b"retry:")


class _EventStreamBase:
    def __init__(self, response: _Any, *, provider: str, limits: _Limits | None, choice: int | None) -> None:
        # a transport failure, or a body its Content-Encoding cannot decode (DecodingError)
        self._transport_error: type[Exception] = _http_module(response).RequestError
        self.http_response = response
        self.provider = provider
        self._limits = limits
        self._choice = choice
        self._assembler: _Any = _backend.impl.StreamAssembler(provider, limits=limits, choice=choice, keep_events=True)
        self._result: _NormalizedResponse | None = None
        self._failure: BaseException | None = None
        #: the body's first bytes, until they tell whether it is an event stream
        self._head: bytes | None = b""
        #: the body read so far, once it is known not to be an event stream
        self._other: bytearray | None = None
        self._json_body = False

    def _take(self, chunk: bytes) -> list[_CanonicalEvent]:
        """The events ``chunk`` completes, once the body's first bytes show
        an event stream; before that the bytes are held (a few), and after
        they show something else, kept up to what :meth:`_not_a_stream`
        reads."""
        if self._other is not None:
            self._other += chunk[: self._other_limit() - len(self._other)]
            return []
        if self._head is None:
            return self._feed(chunk)
        head = self._head + chunk
        start = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")  # a byte order mark, blank lines
        if not start:  # an event stream may start with blank lines: they are not held
            self._head = b""
            return self._feed(head)
        if start[:1] == b"[" and self.provider == _GEMINI:  # Gemini without ``alt=sse``: one array of chunks
            self._head = None
            return self._feed(head)
        if start[:1] in (b"{", b"["):
            self._json_body = True
        elif len(start) < _SSE_HEAD and not any(end in start for end in (b":", b"\r", b"\n")):
            self._head = head  # too few bytes yet to tell
            return []
        elif start.split(b"\n", 1)[0].split(b"\r", 1)[0].split(b":", 1)[0] in _SSE_FIELDS:
            self._head = None
            return self._feed(head)
        self._head = None
        self._other = bytearray()
        return self._take(start)

    def _other_limit(self) -> int:
        """How much of a body that is no event stream is read: a JSON body
        whole, up to ``max_document_bytes`` and one byte more (so that
        ``normalize`` refuses it as too large); of anything else an excerpt."""
        if self._json_body:
            return (self._limits or _DEFAULT_LIMITS).max_document_bytes + 1
        return _ERROR_EXCERPT

    def _read_enough(self) -> bool:
        """Whether nothing more of the body is needed."""
        return self._other is not None and len(self._other) >= self._other_limit()

    def _finished(self) -> list[_CanonicalEvent]:
        """The stream's last events at the end of the body, or the error of
        a body that was no event stream."""
        if self._head is not None:  # too short to tell: read as an event stream
            events = self._feed(self._head)
            self._head = None
            return events if self._failure is not None else events + self._end()
        if self._other is None:
            return self._end()
        self._assembler.abort()
        failure = self._not_a_stream(bytes(self._other))
        self._failure = failure
        raise failure

    def _not_a_stream(self, body: bytes) -> _OutputError:
        """The error of a successful response whose ``body`` is no event
        stream: the ``PROVIDER_ERROR`` a JSON error body is when given to
        ``normalize`` (its code, retryable and message), else
        ``NOT_A_RESPONSE_BODY``."""
        kind = self.http_response.headers.get("content-type", "no content type")
        if self._json_body:
            try:
                _backend.impl.normalize(body, provider=self.provider, limits=self._limits, choice=self._choice)
            except _TransportError as error:
                if error.code == "PROVIDER_ERROR":
                    return error
            except _OutputError:
                pass
            what = "a JSON document, not an event stream (a whole response body is read with normalize)"
        else:
            what = "a body that is not an event stream"
        excerpt = body[:_ERROR_EXCERPT].decode("utf-8", "replace")
        return _StreamError(
            "NOT_A_RESPONSE_BODY",
            f"the provider answered HTTP {self.http_response.status_code} ({kind}) with {what}: {excerpt}",
        )

    def _feed(self, chunk: bytes) -> list[_CanonicalEvent]:
        """The events ``chunk`` produced; on the stream's error, those
        produced before it (the iterator gives them, then raises it, as when
        the chunk comes in smaller pieces)."""
        try:
            self._assembler.feed(chunk)
        except _OutputError as error:
            self._failure = error
        except BaseException as error:
            self._failure = error
            raise
        events: list[_CanonicalEvent] = self._assembler.take_events()
        return events

    def _raise_failure(self) -> None:
        """Raise the error a chunk's events were given before."""
        if self._failure is not None:
            raise self._failure

    def _end(self) -> list[_CanonicalEvent]:
        try:
            self._result = self._assembler.finish()
        except BaseException as error:
            self._failure = error
            raise
        events: list[_CanonicalEvent] = self._assembler.take_events()
        return events

    def _refuse_status(self, head: bytes) -> None:
        """``HTTP_STATUS`` for an error status, kept so that every later
        :meth:`finish` raises it again (not "the stream was not read")."""
        try:
            _check_status(self.http_response, head)
        except _TransportError as error:
            self._failure = error
            raise

    def _fail(self, error: Exception) -> _TransportError:
        self._assembler.abort()
        failure = _dropped(error)
        self._failure = failure
        return failure

    def _interrupted(self, error: BaseException) -> None:
        """Reading stopped for another reason (a cancelled task, a closed
        iterator, an error of the HTTP client's own use): the stream is
        cancelled, so every later :meth:`finish` raises ``STREAM_CANCELLED``
        rather than return or guess at what was not read."""
        if self._failure is None and self._result is None:
            self._assembler.abort()
            self._failure = _StreamError(
                "STREAM_CANCELLED",
                f"reading the stream was interrupted ({type(error).__name__}); no response was produced",
            )

    def _done(self) -> _NormalizedResponse:
        if self._failure is not None:
            raise self._failure
        if self._result is None:
            raise RuntimeError("the stream was not read to its end")
        return self._result


class HttpxEventStream(_EventStreamBase):
    """Canonical events from a streaming ``httpx.Response``; then :meth:`finish`.

    Iterate to forward events (e.g. to a UI); :meth:`finish` reads whatever is
    left and returns the _NormalizedResponse, or raises the stream's typed error.
    """

    def __init__(self, response: _Any, *, provider: str, limits: _Limits | None, choice: int | None) -> None:
        super().__init__(response, provider=provider, limits=limits, choice=choice)
        self._iterator = self._events()

    def __iter__(self) -> _Iterator[_CanonicalEvent]:
        return self._iterator

    def _events(self) -> _Iterator[_CanonicalEvent]:
        if not self.http_response.is_success:
            self._refuse_status(self._error_head())
        try:
            for chunk in self.http_response.iter_bytes():
                yield from self._take(chunk)
                self._raise_failure()
                if self._read_enough():
                    break
        except self._transport_error as error:
            raise self._fail(error) from error
        except BaseException as error:
            self._interrupted(error)
            raise
        yield from self._finished()
        self._raise_failure()

    def _error_head(self) -> bytes:
        """The start of an error status's body, for its excerpt: the rest is
        never read, and a connection dropped meanwhile only ends it early."""
        head = b""
        try:
            for chunk in self.http_response.iter_bytes():
                head += chunk
                if len(head) >= _ERROR_EXCERPT:
                    break
        except self._transport_error:
            pass
        return head

    def finish(self) -> _NormalizedResponse:
        """The NormalizedResponse (reading the rest of the stream first)."""
        for _ in self._iterator:
            pass
        return self._done()


class AsyncHttpxEventStream(_EventStreamBase):
    """:class:`HttpxEventStream` for ``httpx.AsyncClient`` responses."""

    def __init__(self, response: _Any, *, provider: str, limits: _Limits | None, choice: int | None) -> None:
        super().__init__(response, provider=provider, limits=limits, choice=choice)
        self._iterator = self._events()

    async def _events(self) -> _AsyncIterator[_CanonicalEvent]:
        if not self.http_response.is_success:
            self._refuse_status(await self._error_head())
        try:
            async with _aclosing(self.http_response.aiter_bytes()) as chunks:
                async for chunk in chunks:
                    for event in self._take(chunk):
                        yield event
                    self._raise_failure()
                    if self._read_enough():
                        break
        except self._transport_error as error:
            raise self._fail(error) from error
        except BaseException as error:
            self._interrupted(error)
            raise
        for event in self._finished():
            yield event
        self._raise_failure()

    async def _error_head(self) -> bytes:
        """:meth:`HttpxEventStream._error_head`, read asynchronously."""
        head = b""
        try:
            async with _aclosing(self.http_response.aiter_bytes()) as chunks:
                async for chunk in chunks:
                    head += chunk
                    if len(head) >= _ERROR_EXCERPT:
                        break
        except self._transport_error:
            pass
        return head

    def __aiter__(self) -> _AsyncIterator[_CanonicalEvent]:
        return self._iterator

    async def finish(self) -> _NormalizedResponse:
        """The NormalizedResponse (reading the rest of the stream first)."""
        async for _ in self._iterator:
            pass
        return self._done()


def stream_httpx(
    response: _Any, *, provider: str, limits: _Limits | None = None, choice: int | None = None
) -> HttpxEventStream:
    """Wrap a streaming response from ``httpx.Client.stream(...)`` (or httpx2's)."""
    return HttpxEventStream(response, provider=provider, limits=limits, choice=choice)


def astream_httpx(
    response: _Any, *, provider: str, limits: _Limits | None = None, choice: int | None = None
) -> AsyncHttpxEventStream:
    """Wrap a streaming response from ``httpx.AsyncClient.stream(...)`` (or httpx2's)."""
    return AsyncHttpxEventStream(response, provider=provider, limits=limits, choice=choice)
