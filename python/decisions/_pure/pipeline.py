"""The one stream pipeline (pure twin of ``rust/src/core/pipeline.rs``): SSE
decoder -> envelope rule -> provider mapper -> assembler, and the whole-body
path envelope rule -> mapper -> assembler. :class:`Pipeline` and
:func:`normalize_text` have the core's shape; :class:`StreamAssembler` and
:func:`normalize` are the public objects (the native ones are the bindings in
``rust/src/py/assemble.rs``): they check and convert their arguments and
drive a pipeline.
"""

from __future__ import annotations

import dataclasses
import threading
from json.decoder import scanstring  # type: ignore[attr-defined]
from json.encoder import encode_basestring_ascii as quoted
from typing import Any, Callable, Final, Protocol

from .._payload import payload_text
from ..errors import OutputError, StreamError, new_error
from ..limits import DEFAULT_LIMITS, Limits, checked
from ..providers import CANONICAL, DONE
from ..types import CanonicalEvent, ItemStarted, NormalizedResponse, ResponseSnapshot, _Event
from . import providers
from .assemble import Assembler
from .body import body_error, foreign_body, shapeless_body
from .envelope import classify, decode, decoder, envelope_limits, unkeyed, utf8_text
from .json import plain
from .providers.canonical import CanonicalMapper
from .sse import NOT_AN_EVENT_STREAM, RawEvent, _Framer, exclusive, interrupted, no_copy

__all__ = ["Pipeline", "StreamAssembler", "normalize", "normalize_text"]


class _FastEvent(Protocol):
    """A mapper's ``fast_event``; ``colons`` is given to a mapper that
    ``PROVES_KEYS`` (see ``envelope.unkeyed``)."""

    def __call__(
        self, event: str | None, payload: Any, assembler: Assembler, colons: int | None = ...
    ) -> bool | tuple[Any, str]: ...


_MoreDelta = Callable[[Any, str, Assembler], bool]


class _DeltaText:
    """The text of a mapper's delta event around its one varying string (a
    prefix and a suffix), found on one event by :meth:`Pipeline._learn`: a
    text that is the prefix, a JSON string, then the suffix is that event
    with another delta (the string replaced a whole string token in a value
    place, so the text passes the envelope rule as that event did and
    decodes to the same value but for that string), which ``fast_event``
    takes as ``more_delta`` of ``key`` and the new string."""

    __slots__ = ("event", "prefix", "suffix", "key", "limit")

    def __init__(self, event: str | None, prefix: str, suffix: str, key: Any, limit: int) -> None:
        self.event = event
        self.prefix = prefix
        self.suffix = suffix
        self.key = key
        self.limit = limit

    def match(self, text: str) -> str | None:
        """The non-empty delta of ``text``, if it is this event with another
        one: within the size limit, ASCII, and between the prefix and the
        suffix exactly one JSON string without ``\\u`` escapes (the envelope
        rule's surrogate check has nothing to look at); else None."""
        start, end = len(self.prefix), len(text) - len(self.suffix)
        if (
            end - start < 3
            or len(text) > self.limit
            or not text.startswith(self.prefix)
            or not text.endswith(self.suffix)
            or text[start] != '"'
            or not text.isascii()
            or text.find("\\u", start, end) >= 0
        ):
            return None
        try:
            delta, stop = scanstring(text, start + 1, True)
        except ValueError:  # not a JSON string there
            return None
        return delta if stop == end and delta else None


class Pipeline:
    """One provider stream in, one checked :class:`NormalizedResponse` out."""

    __slots__ = (
        "_limits",
        "_mapper",
        "_fields",
        "_decode",
        "_assembler",
        "_framer",
        "_kept",
        "_fast_event",
        "_more_delta",
        "_delta_text",
        "_placements",
        "_unkeyed",
    )

    def __init__(self, provider: str, mapper: providers.Mapper, limits: Limits, keep_events: bool) -> None:
        self._limits = limits
        self._mapper = mapper
        limit_arguments = getattr(mapper, "limit_arguments", None)
        if limit_arguments is not None:  # a mapper that assembles arguments itself bounds them as they come
            limit_arguments(limits.max_call_argument_bytes)
        self._fields = getattr(mapper, "ARGUMENT_FIELDS", ())
        self._decode = decoder(limits, self._fields)
        self._assembler = Assembler(provider, limits)
        self._framer: _Framer | None = None
        self._kept: list[CanonicalEvent] | None = [] if keep_events else None
        # a mapper's ``fast_event`` applies its common events straight to the
        # assembler's entry points (not when the events are kept)
        self._fast_event: _FastEvent | None = None if keep_events else getattr(mapper, "fast_event", None)
        # and its ``more_delta`` lets a delta event's text be read without
        # decoding it, once ``_learn`` has found its shape
        self._more_delta: _MoreDelta | None = getattr(mapper, "more_delta", None)
        self._delta_text: _DeltaText | None = None
        # a mapper's ``placements``: items it produced late, with their place in the response
        self._placements: list[tuple[str, int]] | None = getattr(mapper, "placements", None)
        # a mapper that ``PROVES_KEYS`` is first given event data parsed
        # without the repeated-key check (see ``envelope.unkeyed``), under these limits
        self._unkeyed: Limits | None = (
            envelope_limits(limits) if self._fast_event is not None and getattr(mapper, "PROVES_KEYS", False) else None
        )

    @property
    def assembler(self) -> Assembler:
        """The assembler (its state, the partial items a snapshot shows)."""
        return self._assembler

    def _apply_all(self, events: list[CanonicalEvent]) -> None:
        apply = self._assembler.apply
        kept = self._kept
        for event in events:
            if kept is not None:  # kept even when it fails: the UI sees what was produced
                kept.append(event)
            apply(event)
        placements = self._placements
        if placements:
            for item_id, position in placements:
                self._assembler.place(item_id, position)
                if kept is not None:  # the kept start says where it goes: forwarded, it goes there too
                    _place_kept(kept, item_id, position)
            placements.clear()

    def _map(self, event: str | None, decoded: Any) -> None:
        fast_event = self._fast_event
        if fast_event is None or not fast_event(event, decoded, self._assembler):
            self._apply_all(self._mapper.map_event(event, decoded))

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Raw SSE bytes (or a JSON array, where the provider streams one), in
        any chunking. An error leaves the assembler failed with it."""
        self._assembler.check_usable()
        framer = self._framer
        if framer is None:
            framer = self._framer = _Framer(self._limits, getattr(self._mapper, "ARRAY_FRAMING", False), True)
        taken = False
        try:
            # the events complete before a framing error are mapped first, in
            # byte order: the error of one of them comes before the framing
            # error, whatever the chunking
            raws: list[RawEvent] = []
            stopped = framer.feed_into(data, raws)
            taken = True
            self._map_raws(raws)
            if stopped is not None:
                raise stopped
        except OutputError as err:
            raise self._assembler.fail(err) from None
        except BaseException as exc:
            if taken or framer._error is not None:  # stopped part way: events are lost
                self._assembler.fail(interrupted(exc))
            raise

    def _map_raws(self, raws: list[RawEvent]) -> None:
        """Decode, map and apply the framer's events, in order."""
        decode_event = self._decode
        assembler, map_event = self._assembler, self._mapper.map_event
        if self._kept is not None or type(self._mapper) is not CanonicalMapper:
            fast_event = self._fast_event  # ``_map``, inlined: this loop runs per event
            more_delta = None if fast_event is None else self._more_delta
            light_lim = self._unkeyed
            for event, payload, _, _ in raws:
                shape = self._delta_text
                if more_delta is not None and shape is not None and event == shape.event:
                    delta = shape.match(payload)
                    if delta is not None and more_delta(shape.key, delta, assembler):
                        continue
                taken: bool | tuple[Any, str] = False
                if payload == DONE:  # the marker decodes as itself
                    decoded: Any = DONE
                    taken = False if fast_event is None else fast_event(event, DONE, assembler)
                else:
                    if light_lim is not None and fast_event is not None:
                        light = unkeyed(payload, light_lim)
                        if light is not None:
                            taken = fast_event(event, light[0], assembler, light[1])
                    if not taken:
                        decoded = decode_event(payload)
                        taken = False if fast_event is None else fast_event(event, decoded, assembler)
                if not taken:
                    self._apply_all(map_event(event, decoded))
                elif isinstance(taken, tuple) and more_delta is not None and (shape is None or shape.key != taken[0]):
                    self._learn(event, payload, taken)
            return
        for event, payload, _, _ in raws:
            decoded = decode_event(payload)
            if type(decoded) is dict and len(decoded) == 3:  # a delta with exactly its fields?
                kind = decoded.get("type")
                if (kind == "tool_arguments_delta" or kind == "text_delta") and event in (None, "message", kind):
                    item_id, delta = decoded.get("item_id"), decoded.get("delta")
                    if type(item_id) is str and type(delta) is str:
                        if kind == "text_delta":
                            assembler.text_delta(item_id, delta)
                        else:
                            assembler.arguments_delta(item_id, delta)
                        continue
            self._apply_all(map_event(event, decoded))

    def _learn(self, event: str | None, text: str, found: tuple[Any, str]) -> None:
        """After ``fast_event`` took the delta event ``text`` (the delta of
        ``found[0]`` being ``found[1]``): in an ASCII text without ``\\u``
        or ``\\/`` escapes, a JSON string has one spelling only (the one the
        stdlib's ``encode_basestring_ascii`` writes), so when the delta's
        spelling appears once in the text, that is the delta's string, and
        the text around it becomes the delta shape."""
        if not text.isascii() or "\\u" in text or "\\/" in text:
            return
        key, delta = found
        token = quoted(delta)
        at = text.find(token)
        if at < 0 or text.find(token, at + 1) >= 0:
            return
        lim = envelope_limits(self._limits)
        limit = min(lim.max_document_bytes, lim.max_string_bytes)
        self._delta_text = _DeltaText(event, text[:at], text[at + len(token) :], key, limit)

    def feed_event(self, event: str | None, data: str | bytes | bytearray | memoryview) -> None:
        """One already-decoded provider event: its ``event:`` name and data."""
        self._assembler.check_usable()
        try:
            decoded = decode(data, self._limits, self._fields)
        except OutputError as err:
            raise self._assembler.fail(err) from None
        try:
            self._map(event, decoded)
        except OutputError as err:
            raise self._assembler.fail(err) from None
        except BaseException as exc:  # stopped part way: some of its events were applied
            self._assembler.fail(interrupted(exc))
            raise

    def fail(self, error: OutputError) -> OutputError:
        """Fail the stream with ``error``; returns the error to raise."""
        return self._assembler.fail(error)

    @property
    def limits(self) -> Limits:
        """The stream's limits."""
        return self._limits

    def event_too_large(self) -> OutputError:
        """One event's data known (measured, not written) to be longer than
        ``max_sse_event_bytes``: the error :meth:`feed_event` gives it, the
        stream failed with it."""
        self._assembler.check_usable()
        return self._assembler.fail(classify("", "DOCUMENT_TOO_LARGE", 0, self._limits, self._fields))

    def finish(self) -> NormalizedResponse:
        """End of stream: the response, or the error that makes it incomplete."""
        assembler = self._assembler
        assembler.check_usable()
        if not assembler.is_settled():
            try:
                if self._framer is not None:
                    self._framer.finish_raw()
                    document = self._framer.document
                    if document is not None:
                        raise self._not_an_event_stream(*document)
                self._apply_all(self._mapper.end())
            except OutputError as err:
                raise assembler.fail(err) from None
            except BaseException as exc:  # stopped part way: some closing events were applied
                assembler.fail(interrupted(exc))
                raise
        return assembler.finish(self._mapper.unknown_events)

    def _not_an_event_stream(self, document: bytes, at: int) -> OutputError:
        """The error of a stream that was one JSON ``document`` (from offset
        ``at``): the ``PROVIDER_ERROR`` it is as a whole body (a provider's
        error object: its code, retryable and message), else
        ``NOT_A_RESPONSE_BODY``."""
        try:
            normalize_text(self._assembler.provider, self._mapper, document, self._limits)
        except OutputError as err:
            if err.code == "PROVIDER_ERROR":
                return err
        return StreamError("NOT_A_RESPONSE_BODY", NOT_AN_EVENT_STREAM, offset=at)

    def cancel(self) -> None:
        """Cancel: later calls raise ``StreamError(STREAM_CANCELLED)``."""
        self._assembler.cancel()

    def take_events(self) -> list[CanonicalEvent] | None:
        """The kept canonical events since the last call (None unless kept)."""
        if self._kept is None:
            return None
        events, self._kept = self._kept, []
        return events


def _place_kept(kept: list[CanonicalEvent], item_id: str, position: int) -> None:
    """Give the kept ``ItemStarted`` of ``item_id`` (kept by the same batch, so
    among the last events) its ``position``."""
    for at in range(len(kept) - 1, -1, -1):
        event = kept[at]
        if type(event) is ItemStarted and event.item_id == item_id:
            kept[at] = dataclasses.replace(event, position=position)
            return


def normalize_text(
    provider: str, mapper: providers.Mapper, body: str | bytes | bytearray | memoryview, limits: Limits
) -> NormalizedResponse:
    """A whole body: envelope rule -> ``mapper.map_body`` -> assembler; a body
    read as nothing or not at all that looks like another provider's is
    ``NOT_A_RESPONSE_BODY``. A mapper's ``fast_body`` answers its common
    body without the events (see ``providers``); a mapper that
    ``PROVES_KEYS`` is first given the body parsed without the
    repeated-key check (see :func:`~decisions._pure.envelope.unkeyed`)."""
    fast = getattr(mapper, "fast_body", None)
    if fast is not None and getattr(mapper, "PROVES_KEYS", False):
        light = unkeyed(body, envelope_limits(limits))  # type: ignore[arg-type]
        if light is not None:
            found: NormalizedResponse | None = fast(light[0], provider, limits, light[1])
            if found is not None:
                return found
    try:
        decoded = decode(body, limits, getattr(mapper, "ARGUMENT_FIELDS", ()))
    except OutputError as err:
        raise body_error(body, err) from None
    if fast is not None:
        response: NormalizedResponse | None = fast(decoded, provider, limits)
        if response is not None:
            return response
    try:
        assembler = Assembler(provider, limits)
        for event in mapper.map_body(decoded):
            assembler.apply(event)
        response = assembler.finish(mapper.unknown_events)
    except OutputError as err:
        raise body_error(body, err, provider, decoded) from None
    if not response.items:  # read as nothing: whose is it?
        foreign = foreign_body(provider, decoded) or shapeless_body(provider, decoded)
        if foreign is not None:
            raise foreign
    return response


# ---------------------------------------------------------------- the public objects


def _mapper(provider: str, choice: int | None) -> providers.Mapper:
    if not isinstance(provider, str):
        raise TypeError(f"provider must be a str, not {type(provider).__name__}")
    if provider == CANONICAL:
        return CanonicalMapper()
    mapper = providers.mapper_for(provider, choice)
    if mapper is None:
        known = ", ".join((*providers.PROVIDERS, CANONICAL))
        raise ValueError(f"unknown provider {provider!r}; known: {known}")
    return mapper


def _check_options(limits: Limits | None, choice: int | None) -> Limits:
    if limits is not None:
        if not isinstance(limits, Limits):
            raise TypeError(f"limits must be a decisions.Limits, not {type(limits).__name__}")
        limits = checked(limits)
    if choice is not None and (type(choice) is not int or not 0 <= choice < 2**32):
        shown = repr(choice) if type(choice) is int else type(choice).__name__  # a value's repr may recurse
        raise ValueError(f"choice must be an int from 0 to 2**32 - 1, or None, not {shown}")
    return DEFAULT_LIMITS if limits is None else limits


def _body_readers() -> dict[str, Callable[..., NormalizedResponse | None]]:
    """Provider id -> the ``fast_body`` of a mapper of that provider with no
    choice given, for each mapper that ``PROVES_KEYS``: ``fast_body`` reads
    the mapper's selected choice and nothing else of its state, so one
    mapper serves every body."""
    readers = {}
    for provider in providers.PROVIDERS:
        mapper = providers.mapper_for(provider)
        fast = getattr(mapper, "fast_body", None)
        if fast is not None and getattr(mapper, "PROVES_KEYS", False):
            readers[provider] = fast
    return readers


_BODY_READERS: Final = _body_readers()
_ENVELOPE_DEFAULT: Final = envelope_limits(DEFAULT_LIMITS)


class StreamAssembler:
    """One provider stream in, one checked :class:`NormalizedResponse` out."""

    __slots__ = ("_provider", "_pipeline", "_busy")
    __reduce_ex__ = no_copy
    _provider: str
    _pipeline: Pipeline
    _busy: threading.Lock

    def __new__(
        cls,
        provider: str,
        *,
        limits: Limits | None = None,
        choice: int | None = None,
        keep_events: bool = False,
    ) -> StreamAssembler:
        # made in __new__, as natively: calling __init__ again on a live
        # assembler (from another thread, say) changes nothing
        if type(keep_events) is not bool:  # checked first, as the native argument parser does
            kind = type(keep_events).__name__
            raise TypeError(f"argument 'keep_events': '{kind}' object cannot be converted to 'PyBool'")
        checked = _check_options(limits, choice)
        provider = plain(provider) if isinstance(provider, str) else provider  # the TypeError names its type
        self = object.__new__(cls)
        self._pipeline = Pipeline(provider, _mapper(provider, choice), checked, keep_events)
        self._provider = provider
        # one thread at a time, ``abort``, ``state`` and ``provider`` excepted: they
        # work while another thread feeds, as natively (``rust/src/py/assemble.rs``)
        self._busy = threading.Lock()
        return self

    @property
    def provider(self) -> str:
        """The provider id (read-only, as natively)."""
        return self._provider

    @property
    def state(self) -> str:
        """``init``, ``started``, ``streaming``, ``completed`` or ``failed``."""
        return self._pipeline.assembler.state

    @exclusive
    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Raw SSE bytes of the provider's stream, in any chunking."""
        self._pipeline.assembler.check_usable()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"feed() takes bytes, not {type(data).__name__}")
        self._pipeline.feed(data)

    @exclusive
    def feed_event(self, payload: dict[str, Any] | str | bytes | CanonicalEvent, event: str | None = None) -> None:
        """One already-decoded provider event (its SSE ``data`` and ``event:`` name)."""
        pipeline = self._pipeline
        pipeline.assembler.check_usable()
        if isinstance(payload, _Event):
            if self._provider != CANONICAL:
                raise TypeError("canonical event objects are accepted only with provider='canonical'")
        elif not isinstance(payload, (dict, str, bytes, bytearray, memoryview)):
            raise TypeError(f"feed_event() takes a dict, str or bytes, not {type(payload).__name__}")
        if event is not None and not isinstance(event, str):
            raise TypeError(f"event must be a str or None, not {type(event).__name__}")
        event = plain(event)
        if event is not None and not utf8_text(event):
            raise pipeline.fail(new_error("MALFORMED_EVENT", "event name is not valid UTF-8"))
        if isinstance(payload, (_Event, dict)):
            # an event's wire format, checked as that text would be (as the
            # native backend does): a str field with a lone surrogate, a count
            # past 64 bits or a NaN is refused as in the text; whatever its
            # to_dict gives (a subclass's may give no dict) is written as JSON
            value: Any = payload.to_dict() if isinstance(payload, _Event) else payload
            try:
                text = payload_text(value, pipeline.limits.max_sse_event_bytes)
            except OutputError as err:
                raise pipeline.fail(err) from None
            if text is None:  # too large: told before it was written
                raise pipeline.event_too_large()
            pipeline.feed_event(event, text)
        else:
            pipeline.feed_event(event, payload)

    @exclusive
    def finish(self) -> NormalizedResponse:
        """End of stream: the response, or the error that makes it incomplete."""
        return self._pipeline.finish()

    @exclusive
    def snapshot(self) -> ResponseSnapshot:
        """A provisional view for UIs (never accepted by ``decide``)."""
        return self._pipeline.assembler.snapshot()

    def abort(self) -> None:
        """Cancel: later calls raise ``StreamError(STREAM_CANCELLED)``."""
        self._pipeline.cancel()

    @exclusive
    def take_events(self) -> list[CanonicalEvent]:
        """With ``keep_events=True``: the canonical events produced since the last call."""
        events = self._pipeline.take_events()
        if events is None:
            raise ValueError("take_events() needs StreamAssembler(..., keep_events=True)")
        return events


def normalize(
    body: bytes | str | dict[str, Any],
    /,
    *,
    provider: str,
    limits: Limits | None = None,
    choice: int | None = None,
) -> NormalizedResponse:
    """A whole non-streaming response body -> :class:`NormalizedResponse`."""
    if type(body) is bytes and limits is None and choice is None and type(provider) is str:
        # the common call: ``normalize_text``'s first step, without a mapper of its own
        read = _BODY_READERS.get(provider)
        if read is not None:
            light = unkeyed(body, _ENVELOPE_DEFAULT)
            if light is not None:
                found: NormalizedResponse | None = read(light[0], provider, DEFAULT_LIMITS, light[1])
                if found is not None:
                    return found
    checked = _check_options(limits, choice)
    provider = plain(provider) if isinstance(provider, str) else provider  # the TypeError names its type
    mapper = _mapper(provider, choice)
    if isinstance(body, (dict, list)):
        written = payload_text(body, checked.max_sse_event_bytes)
        if written is None:  # too large: told before it was written
            fields = getattr(mapper, "ARGUMENT_FIELDS", ())
            raise body_error("", classify("", "DOCUMENT_TOO_LARGE", 0, checked, fields))
        text: str | bytes | bytearray | memoryview = written
    elif isinstance(body, (bytearray, memoryview)):
        text = body  # measured where it lies, copied only within the limit
    elif isinstance(body, (str, bytes)):
        text = plain(body)
    else:
        raise TypeError(f"normalize() takes bytes, str or dict, not {type(body).__name__}")
    return normalize_text(provider, mapper, text, checked)
