"""Typed stub of the compiled module ``decisions._native`` (the Rust core).

``decisions._pure`` exposes the same names with the same behaviour. The
module is private: use the names ``decisions`` re-exports. ``make typecheck``
runs ``mypy.stubtest decisions._native`` against the built extension; every
name the module exports must be in ``__all__`` here.
"""

from typing import Any, final

from .limits import Limits
from .types import CanonicalEvent, NormalizedResponse, ResponseSnapshot, SSEEvent

__all__ = [
    "__version__",
    "error_codes",
    "default_limits",
    "loads",
    "Constructor",
    "PROVIDERS",
    "SSEDecoder",
    "StreamAssembler",
    "normalize",
]

__version__: str

#: The provider ids ``StreamAssembler`` and ``normalize`` know, besides ``"canonical"``.
PROVIDERS: tuple[str, ...]

def error_codes() -> list[tuple[str, str]]:
    """Every error code the core can produce, with its layer: ``[(code, layer)]``."""

def default_limits() -> list[tuple[str, int]]:
    """The core's default limits as ``[(field, value)]`` (compared with ``decisions.Limits()``)."""

def loads(data: str | bytes | bytearray | memoryview, /, *, limits: Limits | None = None) -> Any:
    """Parse one strict JSON document (RFC 8259 + I-JSON) into plain Python values.

    Raises :class:`decisions.ParseError` with the code and character offset of
    the first rule broken (the rules are in ``decisions._pure.json``).
    """

@final
class Constructor:
    """Builds instances of a frozen, slotted dataclass from positional field
    values (every field, in field order), as its ``__init__`` sets them but
    without running Python code or ``__post_init__``: for values whose
    invariants the caller has established."""

    def __new__(cls, cls_: type, /) -> Constructor: ...
    @property
    def cls(self) -> type:
        """The class this constructor builds."""
    def __call__(self, *values: Any) -> Any:
        """An instance with each field set to the value at its position
        (TypeError unless every field is given)."""

@final
class SSEDecoder:
    """Incremental ``text/event-stream`` decoder: ``feed`` bytes in any
    chunking, get the same :class:`~decisions.types.SSEEvent` list. ``id`` and
    ``retry`` are the last valid values seen. Errors are ``StreamError`` with
    a byte offset into the stream; after one, every call raises ``STREAM_FAILED``.
    A chunk that completes events and then holds a framing error returns
    those events; the error is raised by the next call (``feed`` or
    ``finish``), as when the chunk comes a byte at a time."""

    def __new__(cls, *, limits: Limits | None = None) -> SSEDecoder: ...
    def feed(self, chunk: bytes | bytearray | memoryview) -> list[SSEEvent]:
        """Consume a chunk; return the events it completed. A chunk of 2 KiB
        or more is decoded with the GIL released."""
    def finish(self) -> list[SSEEvent]:
        """End of stream: raises ``SSE_UNTERMINATED_EVENT`` if an event or line
        is unfinished; bytes fed after it are ``EVENT_AFTER_TERMINAL``."""

@final
class StreamAssembler:
    """One provider stream in, one checked :class:`~decisions.types.NormalizedResponse` out.

    ``provider`` is one of :data:`PROVIDERS` or ``"canonical"`` (canonical
    events themselves: objects, or their ``to_dict()`` wire format as SSE data).
    Unknown ids raise ``ValueError`` listing the known ones."""

    @property
    def provider(self) -> str:
        """The provider id."""
    @property
    def state(self) -> str:
        """``init``, ``started``, ``streaming``, ``completed`` or ``failed``."""
    def __new__(
        cls,
        provider: str,
        *,
        limits: Limits | None = None,
        choice: int | None = None,
        keep_events: bool = False,
    ) -> StreamAssembler: ...
    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Raw SSE bytes of the provider's stream, in any chunking. A chunk of
        2 KiB or more is processed with the GIL released; a call on this
        assembler from another thread meanwhile raises ``RuntimeError``
        (``Already borrowed``) and changes nothing, except ``state``,
        ``provider`` and ``abort()``."""
    def feed_event(self, payload: dict[str, Any] | str | bytes | CanonicalEvent, event: str | None = None) -> None:
        """One already-decoded provider event: its SSE ``data`` (JSON text or a
        dict; with ``provider="canonical"`` also a canonical event object) and
        its SSE ``event:`` name. Undecodable data is ``MALFORMED_EVENT``."""
    def finish(self) -> NormalizedResponse:
        """End of stream: the response, or the ``StreamError`` / ``TransportError``
        that makes it incomplete. ``length`` / content-filter / refusal finishes
        return a response whose tool calls are all ``complete=False``, ended or not."""
    def snapshot(self) -> ResponseSnapshot:
        """A provisional view for UIs (never accepted by ``decide``); each call's
        partial parse is incremental."""
    def abort(self) -> None:
        """Cancel: later calls raise ``StreamError(STREAM_CANCELLED)``. From
        another thread, a feed in flight stops at its next event with it."""
    def take_events(self) -> list[CanonicalEvent]:
        """With ``keep_events=True``: the canonical events produced since the last
        call; otherwise ``ValueError``."""

def normalize(
    body: bytes | str | dict[str, Any],
    /,
    *,
    provider: str,
    limits: Limits | None = None,
    choice: int | None = None,
) -> NormalizedResponse:
    """A whole non-streaming response body -> :class:`~decisions.types.NormalizedResponse`
    (with ``provider="canonical"``: a JSON array of canonical events)."""
