"""Which provider sent this: ``StreamAssembler()`` and ``normalize(body)`` with
``provider="auto"`` (the default).

The provider is told from the first event of a stream (or the shape of a whole
body) by the rules of :func:`candidates`; the response says which
(``NormalizedResponse.provider``, and ``assembler.provider`` once known). An
input that matches no rule, or several, is :class:`~decisions.errors.StreamError`
``AMBIGUOUS_PROVIDER``, whose message and issues list the candidates.

With an explicit provider, ``StreamAssembler(provider)`` *is* the backend's
assembler (native or pure): no wrapper on the hot path. With ``"auto"`` it is
an :class:`AutoAssembler` that holds the bytes until the first event is
decoded (bounded by the SSE limits, checked by the backend's own decoder),
then builds the backend's assembler and hands every later call straight to it.
Until then it keeps the backend's state machine itself: an error (an
undetectable first event, bad SSE bytes) fails the stream, so later calls
raise ``STREAM_FAILED`` (an ``abort()`` after it changes nothing, as on the
backend's assemblers), and an ``abort()`` (from another thread too, while the
provider is being told) cancels the assembler built after it.
"""

from __future__ import annotations as _annotations

import abc as _abc
import typing as _typing
from collections.abc import Mapping as _Mapping
from typing import Any as _Any
from typing import Final as _Final

from . import _backend, _pure
from . import providers as _providers
from ._pure.envelope import envelope_limits as _envelope_limits
from ._pure.jsonarray import WHITESPACE as _WHITESPACE
from ._pure.sse import NOT_AN_EVENT_STREAM as _NOT_AN_EVENT_STREAM
from .errors import OutputError as _OutputError
from .errors import StreamError as _StreamError
from .limits import DEFAULT_LIMITS as _DEFAULT_LIMITS
from .limits import Limits as _Limits
from .types import CanonicalEvent as _CanonicalEvent
from .types import NormalizedResponse as _NormalizedResponse
from .types import ResponseSnapshot as _ResponseSnapshot
from .types import _Event

__all__ = ["AUTO", "candidates", "detect", "StreamAssembler", "AutoAssembler", "normalize"]

#: The provider id that asks for detection.
AUTO: _Final = "auto"

#: The UTF-8 byte order mark an event stream may start with.
_BOM: _Final = b"\xef\xbb\xbf"

#: The rule that tells the provider from a payload (see :func:`decisions.providers.candidates`).
candidates = _providers.candidates


def detect(payload: object, *, stream: bool = True) -> str:
    """The one provider ``payload`` matches, else ``AMBIGUOUS_PROVIDER``."""
    found = candidates(payload, stream=stream)
    if len(found) == 1:
        return found[0]
    known = (*_providers.PROVIDERS, _providers.CANONICAL) if stream else _providers.PROVIDERS
    listed = found or known
    what = "the first event" if stream else "the body"
    reason = "matches several providers" if found else "matches no provider's shape"
    raise _StreamError(
        "AMBIGUOUS_PROVIDER",
        f"cannot tell the provider: {what} {reason}; candidates: {', '.join(listed)}",
        path="$",
        issues=tuple({"path": "$", "code": "provider_candidate", "expected": name} for name in listed),
        hint="pass provider= explicitly",
    )


def _decode(data: object, limits: _Limits | None = None) -> object:
    """``data`` decoded for detection (None when it is not JSON), under the
    limits the backend reads event data and bodies with (a body of 9 MiB, or
    nested 70 deep, is one ``normalize`` reads: detection must read it too)."""
    if isinstance(data, (bytes, bytearray, memoryview, str)):
        try:
            return _backend.impl.loads(data, limits=_envelope_limits(limits or _DEFAULT_LIMITS))
        except ValueError:
            return None
    return data


class StreamAssembler(metaclass=_abc.ABCMeta):  # noqa: B024 (an ABC for register(): the backends implement it)
    """One provider stream in, one checked :class:`~decisions.types.NormalizedResponse` out.

    ``provider`` is one of :data:`decisions.PROVIDERS`, ``"canonical"``, or
    ``"auto"`` (the default: told from the first event, see
    :mod:`decisions.detect`). With a named provider this returns the
    backend's own assembler; ``isinstance(x, StreamAssembler)`` holds for
    both kinds. Methods: ``feed(bytes)`` (raw SSE in any chunking),
    ``feed_event(payload, event=None)`` (one decoded event), ``finish()``
    (the response, or the typed error that makes it incomplete),
    ``snapshot()``, ``abort()``, ``take_events()``; properties ``provider``
    and ``state``."""

    def __new__(
        cls,
        provider: str = AUTO,
        *,
        limits: _Limits | None = None,
        choice: int | None = None,
        keep_events: bool = False,
    ) -> StreamAssembler:
        if provider != AUTO:
            backend: StreamAssembler = _backend.impl.StreamAssembler(
                provider, limits=limits, choice=choice, keep_events=keep_events
            )
            return backend
        return object.__new__(AutoAssembler)

    if _typing.TYPE_CHECKING:  # the interface both kinds implement (the backend's classes at run time)

        @property
        def provider(self) -> str:
            """The provider id (``"auto"`` until an auto assembler has seen its first event)."""

        @property
        def state(self) -> str:
            """``init``, ``started``, ``streaming``, ``completed`` or ``failed``."""

        def feed(self, data: bytes | bytearray | memoryview) -> None:
            """Raw SSE bytes of the provider's stream, in any chunking."""

        def feed_event(
            self, payload: dict[str, _Any] | str | bytes | _CanonicalEvent, event: str | None = None
        ) -> None:
            """One already-decoded provider event (its SSE data, and its ``event:`` name)."""

        def finish(self) -> _NormalizedResponse:
            """End of stream: the response, or the typed error that makes it incomplete."""

        def snapshot(self) -> _ResponseSnapshot:
            """A provisional view for UIs (never accepted by ``decide``)."""

        def abort(self) -> None:
            """Cancel: later calls raise ``StreamError(STREAM_CANCELLED)``."""

        def take_events(self) -> list[_CanonicalEvent]:
            """With ``keep_events=True``: the canonical events produced since the last call."""


StreamAssembler.register(_pure.StreamAssembler)
if _backend.BACKEND == "native":
    StreamAssembler.register(_backend.impl.StreamAssembler)

_DELEGATED: _Final = ("feed", "feed_event", "finish", "snapshot", "abort", "take_events")


class AutoAssembler(StreamAssembler):
    """``StreamAssembler("auto")``: detects the provider from the first event,
    then passes every call to the backend's assembler for that provider."""

    def __init__(
        self,
        provider: str = AUTO,
        *,
        limits: _Limits | None = None,
        choice: int | None = None,
        keep_events: bool = False,
    ) -> None:
        self._options: dict[str, _Any] = {"limits": limits, "choice": choice, "keep_events": keep_events}
        # the options are refused here, as a named provider's are, not at the first event
        _backend.impl.StreamAssembler(_providers.CANONICAL, **self._options)
        self._inner: _Any = None
        self._probe: _Any = _backend.impl.SSEDecoder(limits=limits)
        self._held: list[bytes] = []
        #: whether only whitespace (and a byte order mark) came yet: the first
        #: other byte tells an event stream from a JSON document or array
        self._lead = True
        #: the bytes that came while ``_lead`` (held, counted, not joined again)
        self._lead_bytes = 0
        #: a stream that is one JSON document: all of it, held whole
        self._document: bytearray | None = None
        #: the offset of its first byte other than a byte order mark and whitespace
        self._document_at = 0
        self._aborted = False
        #: the error that failed the stream before the provider was told (later calls: STREAM_FAILED)
        self._error: _OutputError | None = None

    @property
    def provider(self) -> str:
        return AUTO if self._inner is None else str(self._inner.provider)

    @property
    def state(self) -> str:
        if self._inner is not None:
            return str(self._inner.state)
        return "failed" if self._aborted or self._error is not None else "init"

    def _told(self, provider: str) -> None:
        """Start as ``provider`` where nothing came yet: told by what the
        first event is (an SDK object's class), not by its shape."""
        if self._inner is None and self._error is None and not self._aborted and self._lead and not self._held:
            self._start(provider)

    def _start(self, provider: str) -> _Any:
        inner = _backend.impl.StreamAssembler(provider, **self._options)
        self._inner = inner
        for name in _DELEGATED:  # later calls go straight to the backend's methods
            setattr(self, name, getattr(inner, name))
        if self._aborted:  # an abort() that came in while the provider was being told
            inner.abort()
        return inner

    def _check_open(self) -> None:
        if self._aborted:
            raise _StreamError("STREAM_CANCELLED", "the stream was cancelled by the caller")
        if self._error is not None:
            raise _StreamError("STREAM_FAILED", f"the stream already failed ({self._error.code})")

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._check_open()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"feed() takes bytes, not {type(data).__name__}")
        chunk = bytes(memoryview(data))  # the bytes held, as the backend reads them (not ``__bytes__``)
        if (self._lead or self._document is not None) and self._framed(chunk):
            return
        try:
            # the probe returns the events the chunk completed before a framing
            # error and raises it at its next call: the first such event tells
            # the provider, whose assembler reads the stream in byte order
            events = self._probe.feed(chunk)  # the SSE limits bound what is held here
            self._held.append(chunk)
            first = next((sse for sse in events if sse.data.strip()), None)
            if first is None:
                self._probe.feed(b"")  # a framing error after the events (none told the provider): raised now
                return
            provider = detect(_decode(first.data, self._options["limits"]))
        except _OutputError as error:  # the stream fails: later calls raise STREAM_FAILED
            self._error = error
            raise
        held, self._held, self._probe = b"".join(self._held), [], None
        self._start(provider).feed(held)

    def _framed(self, chunk: bytes) -> bool:
        """Whether ``chunk``, after the whitespace held, is no event stream:
        ``[``, Gemini's array of chunks (its stream without ``alt=sse``),
        goes to a Gemini assembler; ``{``, a JSON document, is held whole (up
        to ``max_sse_event_bytes``, as a named provider's assembler holds it)
        and read at :meth:`finish`. False, with nothing done, for anything
        else."""
        if self._document is not None:
            limit = (self._options["limits"] or _DEFAULT_LIMITS).max_sse_event_bytes
            # bounded from its first byte, as a named provider's assembler bounds it
            if len(self._document) - self._document_at + len(chunk) > limit:
                self._error = _StreamError(
                    "NOT_A_RESPONSE_BODY",
                    f"{_NOT_AN_EVENT_STREAM}, longer than max_sse_event_bytes ({limit})",
                    offset=self._document_at,
                )
                raise self._error
            self._document += chunk
            return True
        text = chunk
        if self._lead_bytes < len(_BOM):  # a byte order mark may be completing: the few bytes held joined
            text = b"".join(self._held) + chunk
            if len(text) < len(_BOM) and _BOM.startswith(text):
                self._lead_bytes += len(chunk)
                return False
            text = text.removeprefix(_BOM)
        self._lead_bytes += len(chunk)
        first = text.lstrip(_WHITESPACE)[:1]
        if not first:
            return False
        self._lead = False
        lead = b"".join(self._held) + chunk
        if first == b"[":
            self._held, self._probe = [], None
            self._start(_providers.GEMINI).feed(lead)
            return True
        if first == b"{":
            self._held, self._probe = [], None
            self._document = bytearray()
            self._document_at = len(lead) - len(lead.removeprefix(_BOM).lstrip(_WHITESPACE))
            return self._framed(lead)
        return False

    def _finish_document(self, document: bytes) -> _NormalizedResponse:
        """The outcome of a stream that was one JSON document: its provider's
        assembler reads it (the provider's error object as its
        ``PROVIDER_ERROR``, anything else ``NOT_A_RESPONSE_BODY``); one whose
        provider cannot be told from it as a body is ``NOT_A_RESPONSE_BODY``."""
        parsed = _decode(document.removeprefix(_BOM), self._options["limits"])
        found = [] if parsed is None else candidates(parsed, stream=False)
        if len(found) != 1:
            at = len(document) - len(document.removeprefix(_BOM).lstrip(_WHITESPACE))
            self._error = _StreamError("NOT_A_RESPONSE_BODY", _NOT_AN_EVENT_STREAM, offset=at)
            raise self._error
        inner = self._start(found[0])
        inner.feed(document)
        response: _NormalizedResponse = inner.finish()
        return response

    def feed_event(self, payload: dict[str, _Any] | str | bytes | _CanonicalEvent, event: str | None = None) -> None:
        self._check_open()
        if self._held or not self._lead:
            raise ValueError("this assembler was fed raw bytes; keep to feed()")
        if not isinstance(payload, (dict, str, bytes, bytearray, memoryview, _Event)):
            raise TypeError(f"feed_event() takes a dict, str or bytes, not {type(payload).__name__}")
        decoded: object = (
            payload.to_dict() if hasattr(payload, "to_dict") else _decode(payload, self._options["limits"])
        )
        try:
            provider = detect(decoded)
        except _OutputError as error:  # the stream fails: later calls raise STREAM_FAILED
            self._error = error
            raise
        self._start(provider).feed_event(payload, event)

    def finish(self) -> _NormalizedResponse:
        self._check_open()
        if self._document is not None:
            return self._finish_document(bytes(self._document))
        try:
            if self._held:
                self._probe.finish()  # an event cut in the middle is SSE_UNTERMINATED_EVENT
        except _OutputError as error:  # the stream fails: later calls raise STREAM_FAILED
            self._error = error
            raise
        self._error = _StreamError(
            "NO_TERMINAL_EVENT",
            "the stream ended before its first event, so nothing was received (the provider was not detected)",
        )
        raise self._error

    def snapshot(self) -> _ResponseSnapshot:
        if self._aborted:
            raise _StreamError("STREAM_CANCELLED", "the stream was cancelled by the caller")
        return _ResponseSnapshot(provider=AUTO, response_id=None, model=None, text="", calls=(), state=self.state)

    def abort(self) -> None:
        if self._error is not None and self._inner is None:  # the outcome (that error) was given: kept
            return
        self._aborted = True
        inner = self._inner
        if inner is not None:  # built while this call came in: the backend's abort() cancels it
            inner.abort()

    def take_events(self) -> list[_CanonicalEvent]:
        if not self._options["keep_events"]:
            raise ValueError("take_events needs keep_events=True")
        return []


def normalize(
    body: bytes | str | dict[str, _Any],
    /,
    *,
    provider: str = AUTO,
    limits: _Limits | None = None,
    choice: int | None = None,
) -> _NormalizedResponse:
    """A whole non-streaming response body -> :class:`~decisions.types.NormalizedResponse`.
    ``provider="auto"`` (the default) tells it from the body's shape
    (``AMBIGUOUS_PROVIDER`` when it cannot); the response names it."""
    if provider == AUTO:
        parsed = body if isinstance(body, _Mapping) else _decode(body, limits)
        if parsed is None:  # not JSON: the backend names the error, whichever mapper reads it
            provider = _providers.PROVIDERS[0]
        else:
            provider = detect(parsed, stream=False)
    result: _NormalizedResponse = _backend.impl.normalize(body, provider=provider, limits=limits, choice=choice)
    return result
