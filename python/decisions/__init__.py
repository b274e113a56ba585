"""decisions: turn LLM provider output into validated, typed decisions.

It takes a whole response body or a Server-Sent-Events stream from OpenAI
Chat Completions, OpenAI Responses, Anthropic Messages or Google Gemini and
turns it into either "call these tools with these arguments" or "here is the
final answer", or a typed error that names the layer and the code of what is
wrong. It never executes a tool.
"""

from __future__ import annotations

from . import _backend
from ._backend import BACKEND
from ._version import __version__
from .errors import (
    ERROR_CODES,
    DomainError,
    OutputError,
    ParseError,
    PolicyError,
    SchemaError,
    StreamError,
    TransportError,
)
from .limits import DEFAULT_LIMITS, Limits

loads = _backend.impl.loads

__all__ = [
    "BACKEND",
    "DEFAULT_LIMITS",
    "DomainError",
    "ERROR_CODES",
    "Limits",
    "OutputError",
    "ParseError",
    "PolicyError",
    "SchemaError",
    "StreamError",
    "TransportError",
    "__version__",
    "loads",
]
