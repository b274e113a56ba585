"""The pure-Python twin of ``decisions._native``: the same names with the
same behaviour. It is the reference implementation and the fallback wherever
no wheel fits.
"""

from .._version import __version__
from .json import loads
from .objects import Constructor
from .pipeline import StreamAssembler, normalize
from .providers import PROVIDERS
from .sse import SSEDecoder

__all__ = ["Constructor", "PROVIDERS", "SSEDecoder", "StreamAssembler", "__version__", "loads", "normalize"]
